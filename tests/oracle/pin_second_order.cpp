// Pinocchio's second-order RNEA derivatives (ComputeRNEASecondOrderDerivatives) of states read from stdin: the float64 oracle of the second-order derivatives.
// usage: pin_second_order URDF FLOATING < "B nq nv" then B x (q, v, a) > per state the four nv^3 tensors d2tau_dqdq,
// d2tau_dvdv, d2tau_dqdv, d2tau_dadq, element (i, j, k) at i nv^2 + j nv + k (tests/python/test_second_order.py)
#include <cstdio>
#include <cstdlib>
#include <pinocchio/parsers/urdf.hpp>
#include <pinocchio/algorithm/rnea-second-order-derivatives.hpp>
namespace pin = pinocchio;
int main(int argc, char **argv)
{
    if (argc < 3) return 2;
    pin::Model model;
    if (std::atoi(argv[2])) pin::urdf::buildModel(argv[1], pin::JointModelFreeFlyer(), model);
    else pin::urdf::buildModel(argv[1], model);
    pin::Data data(model);
    long B, nq, nv;
    if (std::scanf("%ld %ld %ld", &B, &nq, &nv) != 3 || nq != model.nq || nv != model.nv) return 3;
    Eigen::VectorXd q(nq), v(nv), a(nv);
    for (long b = 0; b < B; b++) {
        for (long k = 0; k < nq; k++) std::scanf("%lf", &q[k]);
        for (long k = 0; k < nv; k++) std::scanf("%lf", &v[k]);
        for (long k = 0; k < nv; k++) std::scanf("%lf", &a[k]);
        pin::ComputeRNEASecondOrderDerivatives(model, data, q, v, a);
        const Eigen::Tensor<double, 3> *t[4] = {&data.d2tau_dqdq, &data.d2tau_dvdv, &data.d2tau_dqdv, &data.d2tau_dadq};
        for (auto *x : t)
            for (long i = 0; i < nv; i++)
                for (long j = 0; j < nv; j++)
                    for (long k = 0; k < nv; k++) std::printf("%.17g\n", (*x)(i, j, k));
    }
    return 0;
}
