/* Workspace size of the reference algorithms: the largest need of any one of them for one state. */
#include "grid/ref.h"
#include "spatial.h"

size_t grid_ref_work_size(const grid_model *m)
{
    size_t need[] = {
        grid_sp_work_kinematics(m), grid_sp_work_rnea(m), grid_sp_work_crba(m),
        grid_sp_work_minv(m), grid_sp_work_aba(m), grid_sp_work_forward_dynamics(m),
        grid_sp_work_jacobian(m), grid_sp_work_derivatives(m), grid_sp_work_fd_derivatives(m),
        grid_sp_work_ee_derivatives(m), grid_sp_work_second_order(m),
        grid_sp_work_fd_second_order(m), grid_sp_work_ee_second_order(m),
    };
    size_t most = 1;
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
        if (need[k] > most) most = need[k];
    return most;
}
