// Runs Pinocchio's computeABADerivatives on a fixed-base URDF in float32 (model.cast<float>()) and double, printing ddq_dq per state.
//
// usage: pinocchio_float32 URDF < states
// stdin: B, then B lines of q, qd, tau (nv each, text; float32 values written with %.17g so the
//   double paths read them exactly). For each state b it prints three lines: "f32 b ..." (float
//   model), "f64 b ..." (double model), "f64r b ..." (double, on the model's constants rounded to
//   float and back), each with the nv x nv ddq_dq row-major in %.9g / %.17g.
#include <cstdio>
#include <cstdlib>

#include <pinocchio/parsers/urdf.hpp>
#include <pinocchio/algorithm/aba-derivatives.hpp>

namespace pin = pinocchio;

template <typename S>
static void run(const char *tag, int b, const pin::ModelTpl<S> &model, const Eigen::VectorXd &q,
                const Eigen::VectorXd &qd, const Eigen::VectorXd &tau, const char *fmt)
{
    pin::DataTpl<S> data(model);
    pin::computeABADerivatives(model, data, q.cast<S>().eval(), qd.cast<S>().eval(), tau.cast<S>().eval());
    std::printf("%s %d", tag, b);
    for (int i = 0; i < model.nv; i++)
        for (int j = 0; j < model.nv; j++) std::printf(fmt, (double)data.ddq_dq(i, j));
    std::printf("\n");
}

int main(int argc, char **argv)
{
    if (argc != 2) { std::fprintf(stderr, "usage: %s URDF < states\n", argv[0]); return 2; }
    pin::Model model;
    pin::urdf::buildModel(argv[1], model);
    const pin::ModelTpl<float> model32 = model.cast<float>();
    const pin::Model model64r = model32.cast<double>();
    const int nv = model.nv;
    int B;
    if (std::scanf("%d", &B) != 1) return 1;
    for (int b = 0; b < B; b++) {
        Eigen::VectorXd x(3 * nv);
        for (int k = 0; k < 3 * nv; k++)
            if (std::scanf("%lf", &x[k]) != 1) { std::fprintf(stderr, "short input at state %d\n", b); return 1; }
        const Eigen::VectorXd q = x.segment(0, nv), qd = x.segment(nv, nv), tau = x.segment(2 * nv, nv);
        run("f32", b, model32, q, qd, tau, " %.9g");
        run("f64", b, model, q, qd, tau, " %.17g");
        run("f64r", b, model64r, q, qd, tau, " %.17g");
    }
    return 0;
}
