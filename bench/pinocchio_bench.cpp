// Times Pinocchio's rigid-body algorithms per call (one thread, double) on a URDF and prints JSON.
//
// usage: pinocchio_bench URDF [--floating-base] [--pool N] [--runs R] [--min-ms T]
//                             [--frame LINK] [--reference local|world|local_world_aligned]
//
// Each algorithm is called over a pool of pre-generated random states, cycled, many times in
// a row; one run is a timed loop of at least T milliseconds, runs of all algorithms are
// interleaved in R rounds, and the figure reported is the median over the R runs of
// (loop time / calls), in microseconds. States follow Pinocchio's own
// benchmarks: q = randomConfiguration(model, -1, 1) (quaternion normalised, continuous joints
// as cos/sin), v, a, tau uniform in [-1, 1].
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <pinocchio/parsers/urdf.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/rnea-second-order-derivatives.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/cholesky.hpp>
#include <pinocchio/algorithm/frames.hpp>
#include <pinocchio/math.hpp>
#include <pinocchio/spatial.hpp>
#include <pinocchio/algorithm/jacobian.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/energy.hpp>
#include <pinocchio/algorithm/regressor.hpp>
#include <pinocchio/algorithm/center-of-mass.hpp>
#include <pinocchio/algorithm/centroidal.hpp>
#include <pinocchio/algorithm/centroidal-derivatives.hpp>

namespace pin = pinocchio;

struct Options {
    std::string urdf;
    bool floating = false;
    int pool = 256;
    int runs = 7;
    double min_ms = 20.0;
    std::string frame;               // link name of the Jacobian frame; empty = child link of the last joint
    std::string reference = "local"; // Jacobian reference frame
};

struct Timing {
    double median_us, min_us;
    long long calls_per_run;
};

static double now_seconds()
{
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// calls of one algorithm per timed loop: grown until a loop lasts min_ms (after a warm-up)
static long long calibrate(const std::function<void(int)> &call, int pool, double min_ms)
{
    for (int i = 0; i < 2 * pool; i++) call(i % pool);
    long long n = pool;
    for (;;) {
        double t0 = now_seconds();
        for (long long i = 0; i < n; i++) call((int)(i % pool));
        double dt = now_seconds() - t0;
        if (dt * 1e3 >= min_ms || n > (1LL << 34)) {
            if (dt > 0) n = (long long)((double)n * (min_ms / 1e3) / dt) + 1;
            break;
        }
        n *= (dt * 1e3 < min_ms / 16) ? 8 : 2;
    }
    return std::max(n, (long long)pool);
}

// one timed loop of n calls cycling the pool; microseconds per call
static double timed_loop(const std::function<void(int)> &call, int pool, long long n)
{
    double t0 = now_seconds();
    for (long long i = 0; i < n; i++) call((int)(i % pool));
    return (now_seconds() - t0) / (double)n * 1e6;
}

static Timing summarize(std::vector<double> per_call, long long n)
{
    std::sort(per_call.begin(), per_call.end());
    Timing t;
    t.median_us = per_call[per_call.size() / 2];
    t.min_us = per_call.front();
    t.calls_per_run = n;
    return t;
}

static int parse_args(int argc, char **argv, Options &o)
{
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&](const char *name) -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "pinocchio_bench: %s needs a value\n", name);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--floating-base") o.floating = true;
        else if (a == "--pool") o.pool = std::atoi(next("--pool"));
        else if (a == "--runs") o.runs = std::atoi(next("--runs"));
        else if (a == "--min-ms") o.min_ms = std::atof(next("--min-ms"));
        else if (a == "--frame") o.frame = next("--frame");
        else if (a == "--reference") o.reference = next("--reference");
        else if (a == "-h" || a == "--help") return 1;
        else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "pinocchio_bench: unknown option %s\n", a.c_str());
            return 1;
        } else if (o.urdf.empty()) o.urdf = a;
        else return 1;
    }
    if (o.urdf.empty() || o.pool < 1 || o.runs < 1 || o.min_ms <= 0) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    Options o;
    if (parse_args(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: pinocchio_bench URDF [--floating-base] [--pool N] [--runs R] [--min-ms T]\n"
                     "                            [--frame LINK] [--reference local|world|local_world_aligned]\n");
        return 2;
    }

    // model: mimic joints stay independent joints (buildModel's default)
    pin::Model model;
    try {
        if (o.floating) pin::urdf::buildModel(o.urdf, pin::JointModelFreeFlyer(), model);
        else pin::urdf::buildModel(o.urdf, model);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pinocchio_bench: cannot load %s: %s\n", o.urdf.c_str(), e.what());
        return 1;
    }
    pin::Data data(model);
    const int nq = model.nq, nv = model.nv, P = o.pool;

    // jacobian frame: the named link, else the child link of the last joint
    pin::FrameIndex fid = 0;
    if (!o.frame.empty()) {
        if (!model.existBodyName(o.frame)) {
            std::fprintf(stderr, "pinocchio_bench: no link named %s\n", o.frame.c_str());
            return 1;
        }
        fid = model.getBodyId(o.frame);
    } else {
        for (pin::FrameIndex f = 0; f < (pin::FrameIndex)model.nframes; f++)
            if (model.frames[f].type == pin::BODY && model.frames[f].parentJoint == (pin::JointIndex)(model.njoints - 1)) {
                fid = f;
                break;
            }
    }
    pin::ReferenceFrame rf = pin::LOCAL;
    if (o.reference == "world") rf = pin::WORLD;
    else if (o.reference == "local_world_aligned") rf = pin::LOCAL_WORLD_ALIGNED;
    else if (o.reference != "local") {
        std::fprintf(stderr, "pinocchio_bench: unknown reference frame %s\n", o.reference.c_str());
        return 2;
    }

    // the state pool, seeded for repeatability
    std::srand(12345);
    const Eigen::VectorXd qmax = Eigen::VectorXd::Ones(nq);
    std::vector<Eigen::VectorXd> qs(P), vs(P), as(P), taus(P);
    for (int i = 0; i < P; i++) {
        qs[i] = pin::randomConfiguration(model, -qmax, qmax);
        vs[i] = Eigen::VectorXd::Random(nv);
        as[i] = Eigen::VectorXd::Random(nv);
        taus[i] = Eigen::VectorXd::Random(nv);
    }
    Eigen::VectorXd qdd(nv);
    Eigen::Vector4d quat;
    Eigen::MatrixXd ddq_dq(nv, nv), ddq_dv(nv, nv);
    pin::Data::Matrix6x J = pin::Data::Matrix6x::Zero(6, nv);
    Eigen::Matrix<double, 6, 6> lambda;
    Eigen::Matrix<double, 6, 1> pose6;
    pin::Data::Matrix6x dpose = pin::Data::Matrix6x::Zero(6, nv);
    const Eigen::Vector3d tool(0.05, -0.02, 0.1);
    pin::Data::Matrix6x dh_dq = pin::Data::Matrix6x::Zero(6, nv), dhdot_dq = dh_dq, dhdot_dv = dh_dq, dhdot_da = dh_dq;

    // the algorithms, named as in include/grid/abi.h (extra Pinocchio variants suffixed)
    struct Algo {
        const char *name;
        std::function<void(int)> call;
    };
    std::vector<Algo> algos = {
        {"fk", [&](int i) { pin::forwardKinematics(model, data, qs[i]); }},
        {"rnea", [&](int i) { pin::rnea(model, data, qs[i], vs[i], as[i]); }},
        {"nle", [&](int i) { pin::nonLinearEffects(model, data, qs[i], vs[i]); }},
        {"gravity", [&](int i) { pin::computeGeneralizedGravity(model, data, qs[i]); }},
        {"crba", [&](int i) { pin::crba(model, data, qs[i]); }},
        {"crba_world", [&](int i) { pin::crba(model, data, qs[i], pin::Convention::WORLD); }},
        {"minv", [&](int i) { pin::computeMinverse(model, data, qs[i]); }},
        // what Pinocchio's own benchmark reports as computeMinverse (COMPUTE_M_INVERSE): the
        // q-less overload reusing the kinematics of a previous aba(..., WORLD) call
        {"minv_after_aba", [&](int) { pin::computeMinverse(model, data); }},
        {"aba", [&](int i) { pin::aba(model, data, qs[i], vs[i], taus[i]); }},
        {"aba_world", [&](int i) { pin::aba(model, data, qs[i], vs[i], taus[i], pin::Convention::WORLD); }},
        // forward dynamics the Pinocchio way: M^-1 (tau - c) by CRBA + NLE + sparse Cholesky
        {"fd", [&](int i) {
             pin::crba(model, data, qs[i]);
             pin::nonLinearEffects(model, data, qs[i], vs[i]);
             qdd = taus[i] - data.nle;
             pin::cholesky::decompose(model, data);
             pin::cholesky::solve(model, data, qdd);
         }},
        {"frame_jacobian", [&](int i) { pin::computeFrameJacobian(model, data, qs[i], fid, rf, J); }},
        // one frame's position and quaternion (fk_batched)
        {"fk_batched", [&](int i) {
             pin::forwardKinematics(model, data, qs[i]);
             pin::updateFramePlacement(model, data, fid);
             quat = Eigen::Quaterniond(data.oMf[fid].rotation()).coeffs();
         }},
        // first-order derivatives (data.dtau_dq / dtau_dv, data.ddq_dq / ddq_dv)
        {"rnea_grad", [&](int i) { pin::computeRNEADerivatives(model, data, qs[i], vs[i], as[i]); }},
        {"fd_grad", [&](int i) { pin::computeABADerivatives(model, data, qs[i], vs[i], taus[i]); }},
        // energies, their regressors, the Coriolis matrix (issue 27)
        {"energy", [&](int i) { pin::computeMechanicalEnergy(model, data, qs[i], vs[i]); }},
        {"kinetic_energy_regressor", [&](int i) { pin::computeKineticEnergyRegressor(model, data, qs[i], vs[i]); }},
        {"potential_energy_regressor", [&](int i) { pin::computePotentialEnergyRegressor(model, data, qs[i]); }},
        {"coriolis_matrix", [&](int i) { pin::computeCoriolisMatrix(model, data, qs[i], vs[i]); }},
        {"inverse_dynamics_regressor", [&](int i) { pin::computeJointTorqueRegressor(model, data, qs[i], vs[i], as[i]); }},
        // centroidal quantities and the Jacobian's time variation (issue 27)
        {"com", [&](int i) {
             pin::centerOfMass(model, data, qs[i]);
             pin::jacobianCenterOfMass(model, data, qs[i]);
         }},
        {"ccrba", [&](int i) { pin::ccrba(model, data, qs[i], vs[i]); }},
        {"cmm_time_variation", [&](int i) { pin::dccrba(model, data, qs[i], vs[i]); }},
        {"centroidal_derivatives", [&](int i) {
             pin::computeCentroidalDynamicsDerivatives(model, data, qs[i], vs[i], as[i], dh_dq, dhdot_dq, dhdot_dv,
                                                       dhdot_da);
         }},
        // the operational-space inertia: Pinocchio has no single call, so our composition of its calls (the frame
        // Jacobian, computeMinverse mirrored, the 6x6 product J M^-1 J^T and its inverse by an LDL^T)
        {"osc_inertia", [&](int i) {
             pin::computeFrameJacobian(model, data, qs[i], fid, rf, J);
             pin::computeMinverse(model, data, qs[i]);
             data.Minv.triangularView<Eigen::StrictlyLower>() = data.Minv.transpose();
             lambda = (J * data.Minv * J.transpose()).ldlt().solve(Eigen::Matrix<double, 6, 6>::Identity());
         }},
        // a point at a tool offset in one frame, [xyz rpy], and its derivative (d xyz: the LOCAL_WORLD_ALIGNED
        // Jacobian with the lever arm; d rpy: computeRpyJacobianInverse times its angular rows): Pinocchio's calls for
        // end_effector_pose_runtime and its gradient at one target
        {"ee_pose_runtime", [&](int i) {
             pin::forwardKinematics(model, data, qs[i]);
             pin::updateFramePlacement(model, data, fid);
             const pin::SE3 &M = data.oMf[fid];
             pose6.head<3>() = M.translation() + M.rotation() * tool;
             pose6.tail<3>() = pin::rpy::matrixToRpy(M.rotation());
         }},
        {"ee_pose_runtime_grad", [&](int i) {
             pin::computeFrameJacobian(model, data, qs[i], fid, pin::LOCAL_WORLD_ALIGNED, J);
             const pin::SE3 &M = data.oMf[fid];
             const Eigen::Vector3d r = M.rotation() * tool;
             dpose.topRows<3>() = J.topRows<3>() - pin::skew(r) * J.bottomRows<3>();
             dpose.bottomRows<3>() =
                 pin::rpy::computeRpyJacobianInverse(pin::rpy::matrixToRpy(M.rotation()), pin::WORLD) * J.bottomRows<3>();
         }},
        // the second-order RNEA derivatives (IDSVA): four nv^3 tensors
        {"idsva_so", [&](int i) { pin::ComputeRNEASecondOrderDerivatives(model, data, qs[i], vs[i], as[i]); }},
        {"frame_jacobian_dot", [&](int i) {
             pin::computeJointJacobiansTimeVariation(model, data, qs[i], vs[i]);
             pin::updateFramePlacements(model, data);
             pin::getFrameJacobianTimeVariation(model, data, fid, rf, J);
         }},
        // the other formulation of the FD gradient, with Pinocchio's own pieces (issue 10 asks for both measured):
        // qdd by ABA, the RNEA derivatives at qdd, M^-1 (computeMinverse: upper triangle, mirrored), dense -M^-1 D
        {"fd_grad_minv_dtau", [&](int i) {
             qdd = pin::aba(model, data, qs[i], vs[i], taus[i]);
             pin::computeRNEADerivatives(model, data, qs[i], vs[i], qdd);
             pin::computeMinverse(model, data, qs[i]);
             data.Minv.triangularView<Eigen::StrictlyLower>() = data.Minv.transpose();
             ddq_dq.noalias() = -data.Minv * data.dtau_dq;
             ddq_dv.noalias() = -data.Minv * data.dtau_dv;
         }},
    };

    // calibrate every algorithm, then time in rounds (one loop of each algorithm per round)
    // so that a slow spell of the machine spreads over all algorithms instead of one
    std::vector<long long> n(algos.size());
    auto prepare = [&](size_t k) {
        if (std::strcmp(algos[k].name, "minv_after_aba") == 0)
            pin::aba(model, data, qs[0], vs[0], taus[0], pin::Convention::WORLD);
    };
    for (size_t k = 0; k < algos.size(); k++) {
        prepare(k);
        n[k] = calibrate(algos[k].call, P, o.min_ms);
    }
    std::vector<std::vector<double>> per_call(algos.size());
    double checksum = 0;
    for (int r = 0; r < o.runs; r++)
        for (size_t k = 0; k < algos.size(); k++) {
            prepare(k);
            per_call[k].push_back(timed_loop(algos[k].call, P, n[k]));
            checksum += data.tau.sum() + data.M(0, 0) + qdd.sum() + J.sum() + data.kinetic_energy + data.C(0, 0);
        }

    // sanity check of the FD composition: it must agree with ABA on every pool state
    double fd_vs_aba = 0;
    const auto fd = std::find_if(algos.begin(), algos.end(), [](const Algo &a) { return std::strcmp(a.name, "fd") == 0; });
    for (int i = 0; i < P; i++) {
        Eigen::VectorXd ddq_aba = pin::aba(model, data, qs[i], vs[i], taus[i]);
        fd->call(i);
        fd_vs_aba = std::max(fd_vs_aba, (qdd - ddq_aba).cwiseAbs().maxCoeff());
    }

    // and the two FD-gradient formulations agree
    double grad_formulations = 0;
    const auto fg = std::find_if(algos.begin(), algos.end(),
                                 [](const Algo &a) { return std::strcmp(a.name, "fd_grad_minv_dtau") == 0; });
    for (int i = 0; i < P; i++) {
        pin::computeABADerivatives(model, data, qs[i], vs[i], taus[i]);
        const Eigen::MatrixXd a_dq = data.ddq_dq, a_dv = data.ddq_dv;
        fg->call(i);
        const double scale = std::max(1.0, std::max(a_dq.cwiseAbs().maxCoeff(), a_dv.cwiseAbs().maxCoeff()));
        grad_formulations = std::max(grad_formulations, std::max((ddq_dq - a_dq).cwiseAbs().maxCoeff(),
                                                                 (ddq_dv - a_dv).cwiseAbs().maxCoeff()) / scale);
    }

    // print
    std::printf("{\n");
    std::printf("  \"library\": \"pinocchio\",\n  \"pinocchio_version\": \"%s\",\n", PINOCCHIO_VERSION);
    std::printf("  \"urdf\": \"%s\",\n  \"robot\": \"%s\",\n", o.urdf.c_str(), model.name.c_str());
    std::printf("  \"floating_base\": %s,\n", o.floating ? "true" : "false");
    std::printf("  \"nq\": %d, \"nv\": %d, \"njoints\": %d, \"nframes\": %d,\n", nq, nv, (int)model.njoints,
                (int)model.nframes);
    std::printf("  \"pool\": %d, \"runs\": %d, \"min_ms\": %g,\n", P, o.runs, o.min_ms);
    std::printf("  \"jacobian_frame\": \"%s\", \"reference_frame\": \"%s\",\n", model.frames[fid].name.c_str(),
                o.reference.c_str());
    std::printf("  \"unit\": \"us per call\",\n  \"results\": {\n");
    for (size_t k = 0; k < algos.size(); k++) {
        Timing t = summarize(per_call[k], n[k]);
        std::printf("    \"%s\": {\"median_us\": %.4f, \"min_us\": %.4f, \"calls_per_run\": %lld}%s\n", algos[k].name,
                    t.median_us, t.min_us, t.calls_per_run, k + 1 < algos.size() ? "," : "");
    }
    std::printf("  },\n  \"fd_vs_aba_max_abs_diff\": %.3g,\n  \"fd_grad_formulations_max_rel_diff\": %.3g,\n"
                "  \"checksum\": %.6g\n}\n", fd_vs_aba, grad_formulations, checksum + ddq_dq.sum());
    return 0;
}
