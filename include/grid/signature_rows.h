/* The rows of the signature table, one GRID_ROW each: a method's public description in one place. */
/* Each entry is GRID_ROW(ID, id, REF, initializer): ID names the row (GRID_ALGO_<ID>, signature.h), id is its
   lower-case token, REF how the reference provider computes it (OWN: its function ref_row_<id> in src/ref; VJP: the
   row whose vjp link names it contracted with the cotangent, src/ref/batch.c), and the initializer is the
   grid_signature_row (signature.h; its helpers DIM, ARG, IN_*, OUT_* are signature.c's). No include guard: each
   includer defines GRID_ROW to take what it needs. A new method appends its row at the end (the ids are an ABI). */

GRID_ROW(RNEA, rnea, OWN,
         {"rnea", "inverse_dynamics", "rnea", "tau = M(q) qdd + c(q, qd) - J^T f_ext (RNEA)",
          4, {IN_Q, IN_QD, IN_QDD_OPT, IN_FEXT_OPT}, 1, {OUT_NV("tau", "joint torques")},
          0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_RNEA_GRAD, GRID_ALGO_RNEA_VJP, GRID_QTY_FORCE, NO_RATE})
GRID_ROW(NLE, nle, OWN,
         {"nle", "nonlinear_effects", "", "c(q, qd) = rnea(q, qd, 0)",
          2, {IN_Q, IN_QD}, 1, {OUT_NV("c", "bias torques")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_FORCE, NO_RATE})
GRID_ROW(GRAVITY, gravity, OWN,
         {"gravity", "generalized_gravity", "", "g(q) = rnea(q, 0, 0)",
          1, {IN_Q}, 1, {OUT_NV("g", "gravity torques")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_FORCE, NO_RATE})
GRID_ROW(CRBA, crba, OWN,
         {"crba", "crba", "", "M(q), full symmetric (CRBA)",
          1, {IN_Q}, 1, {OUT_NVxNV("M", "mass matrix")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_INERTIA, NO_RATE})
GRID_ROW(MINV, minv, OWN,
         {"minv", "minv", "", "M(q)^-1 by the direct algorithm",
          1, {IN_Q}, 1, {OUT_NVxNV("Minv", "inverse mass matrix")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS,
          GRID_QTY_INERTIA, NO_RATE})
GRID_ROW(FD, fd, OWN,
         {"fd", "forward_dynamics", "fd", "qdd = M^-1 (u - c(q, qd) + J^T f_ext)",
          4, {IN_Q, IN_QD, IN_U, IN_FEXT_OPT}, 1, {OUT_NV("qdd", "joint accelerations")},
          0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_FD_GRAD, GRID_ALGO_FD_VJP, GRID_QTY_ACCEL, NO_RATE})
GRID_ROW(ABA, aba, OWN,
         {"aba", "aba", "", "qdd by the articulated-body algorithm",
          4, {IN_Q, IN_QD, IN_U, IN_FEXT_OPT}, 1, {OUT_NV("qdd", "joint accelerations")},
          0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_FD_GRAD, GRID_ALGO_FD_VJP, GRID_QTY_ACCEL, NO_RATE})
GRID_ROW(FK, fk, OWN,
         {"fk", "forward_kinematics", "", "oMi of every body, 4x4 homogeneous, row-major",
          1, {IN_Q}, 1, {ARG("oMi", "body placements", GRID_REQUIRED, DIM(NB, 1), DIM(ONE, 4), DIM(ONE, 4))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_WORLD, NO_RATE})
GRID_ROW(EE_POSE, ee_pose, OWN,
         {"ee_pose", "end_effector_pose", "", "[x y z roll pitch yaw] per end effector",
          1, {IN_Q}, 1, {ARG("pose", "end-effector poses", GRID_REQUIRED, DIM(NEE, 6))},
          0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_EE_POSE_GRAD, GRID_ALGO_EE_POSE_VJP, GRID_QTY_WORLD, NO_RATE})
GRID_ROW(FRAME_JACOBIAN, frame_jacobian, OWN,
         {"frame_jacobian", "frame_jacobian", "", "J of one frame, rows [linear; angular]",
          1, {IN_Q}, 1, {ARG("J", "frame Jacobian", GRID_REQUIRED, DIM(ONE, 6), DIM(NV, 1))},
          2, {{"frame", 0, DIM(NFRAMES, 1), "frame id %ld is out of range: the robot has %d frames"},
              {"reference_frame", 0, DIM(ONE, 3),
               "reference_frame id %ld is not WORLD (0), LOCAL (1) or LOCAL_WORLD_ALIGNED (2)"}},
          GRID_GPU_THREAD, NO_LINKS, GRID_QTY_JACOBIAN, NO_RATE})
/* first-order derivatives: q columns along the local tangent (pin.integrate), as Pinocchio's */
GRID_ROW(RNEA_GRAD, rnea_grad, OWN,
         {"rnea_grad", "inverse_dynamics_gradient", "rnea_grad",
          "[dtau/dq | dtau/dqd] of RNEA at (q, qd, qdd, f_ext) (computeRNEADerivatives)",
          4, {IN_Q, IN_QD, IN_QDD_OPT, IN_FEXT_OPT}, 1, {OUT_NVx2NV("dtau", "torque gradient")},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
GRID_ROW(FD_GRAD, fd_grad, OWN,
         {"fd_grad", "forward_dynamics_gradient", "forward_dynamics_grad aba_gradient",
          "[dqdd/dq | dqdd/dqd] of forward dynamics at (q, qd, u, f_ext) (computeABADerivatives)",
          4, {IN_Q, IN_QD, IN_U, IN_FEXT_OPT}, 1, {OUT_NVx2NV("dqdd", "acceleration gradient")},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
GRID_ROW(EE_POSE_GRAD, ee_pose_grad, OWN,
         {"ee_pose_grad", "end_effector_pose_gradient", "ee_pose_grad",
          "d[x y z roll pitch yaw]/dq per end effector (local tangent; rpy rows: coordinate "
          "derivatives, infinite at pitch = +-pi/2)",
          1, {IN_Q}, 1, {ARG("dpose", "pose gradient", GRID_REQUIRED, DIM(NEE, 6), DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
/* vector-Jacobian products, cotangent^T d(out)/d(in) over the differentiable inputs (the specification's: ID in
   q and qd, FD in q, qd and u, the pose in q), the q block in the local tangent: the backward passes of autograd */
GRID_ROW(RNEA_VJP, rnea_vjp, VJP,
         {"rnea_vjp", "inverse_dynamics_vjp", "rnea_vjp",
          "[g^T dtau/dq | g^T dtau/dqd] of RNEA at (q, qd, qdd, f_ext) for a cotangent g (O(n))",
          5, {IN_Q, IN_QD, IN_COTANGENT(DIM(NV, 1)), IN_QDD_OPT, IN_FEXT_OPT},
          1, {ARG("vjp", "cotangents of q and qd", GRID_REQUIRED, DIM(NV, 2))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
GRID_ROW(FD_VJP, fd_vjp, VJP,
         {"fd_vjp", "forward_dynamics_vjp", "fd_vjp aba_vjp",
          "[g^T dqdd/dq | g^T dqdd/dqd | g^T dqdd/du] of forward dynamics at (q, qd, u, f_ext) for a "
          "cotangent g",
          5, {IN_Q, IN_QD, IN_U, IN_COTANGENT(DIM(NV, 1)), IN_FEXT_OPT},
          1, {ARG("vjp", "cotangents of q, qd and u", GRID_REQUIRED, DIM(NV, 3))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
GRID_ROW(EE_POSE_VJP, ee_pose_vjp, VJP,
         {"ee_pose_vjp", "end_effector_pose_vjp", "ee_pose_vjp",
          "g^T d[x y z roll pitch yaw]/dq of the end-effector poses for a cotangent g",
          2, {IN_Q, IN_COTANGENT(DIM(NEE, 6))},
          1, {ARG("vjp", "cotangent of q", GRID_REQUIRED, DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
/* energies and centroidal quantities */
GRID_ROW(ENERGY, energy, OWN,
         {"energy", "energy", "", "[kinetic, potential, mechanical] energy at (q, qd) (computeMechanicalEnergy)",
          2, {IN_Q, IN_QD}, 1, {ARG("E", "energies", GRID_REQUIRED, DIM(ONE, 3))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_WORLD, NO_RATE})
GRID_ROW(KINETIC_ENERGY_REGRESSOR, kinetic_energy_regressor, OWN,
         {"kinetic_energy_regressor", "kinetic_energy_regressor", "",
          "y with kinetic energy = y . pi, pi the dynamic parameters per body (computeKineticEnergyRegressor)",
          2, {IN_Q, IN_QD}, 1, {ARG("y", "inertial parameters", GRID_REQUIRED, DIM(NB, 10))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_WORLD, NO_RATE})
GRID_ROW(POTENTIAL_ENERGY_REGRESSOR, potential_energy_regressor, OWN,
         {"potential_energy_regressor", "potential_energy_regressor", "",
          "y with potential energy = y . pi, pi the dynamic parameters per body (computePotentialEnergyRegressor)",
          1, {IN_Q}, 1, {ARG("y", "inertial parameters", GRID_REQUIRED, DIM(NB, 10))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_WORLD, NO_RATE})
GRID_ROW(CORIOLIS_MATRIX, coriolis_matrix, OWN,
         {"coriolis_matrix", "coriolis_matrix", "",
          "C(q, qd) with C qd + g = nonlinear_effects and dM/dt = C + C^T (computeCoriolisMatrix)",
          2, {IN_Q, IN_QD}, 1, {OUT_NVxNV("C", "Coriolis matrix")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS,
          GRID_QTY_CORIOLIS, NO_RATE})
GRID_ROW(INVERSE_DYNAMICS_REGRESSOR, inverse_dynamics_regressor, OWN,
         {"inverse_dynamics_regressor", "inverse_dynamics_regressor", "",
          "Y with tau = Y . pi, pi the dynamic parameters per body (computeJointTorqueRegressor)",
          3, {IN_Q, IN_QD, IN_QDD_OPT}, 1,
          {ARG("Y", "joint torque regressor", GRID_REQUIRED, DIM(NV, 1), DIM(NB, 10))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_FORCE, NO_RATE})
GRID_ROW(COM, com, OWN,
         {"com", "com", "", "centre of mass and its Jacobian, world frame (centerOfMass, jacobianCenterOfMass)",
          1, {IN_Q}, 2,
          {ARG("com", "centre of mass", GRID_REQUIRED, DIM(ONE, 3)),
           ARG("J", "centre-of-mass Jacobian", GRID_REQUIRED, DIM(ONE, 3), DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTYS2(GRID_QTY_WORLD, GRID_QTY_JACOBIAN), NO_RATE})
GRID_ROW(CCRBA, ccrba, OWN,
         {"ccrba", "ccrba", "",
          "centroidal momentum matrix A and momentum h = A qd about the centre of mass, world axes (ccrba)",
          2, {IN_Q, IN_QD}, 2,
          {ARG("A", "centroidal momentum matrix", GRID_REQUIRED, DIM(ONE, 6), DIM(NV, 1)),
           ARG("h", "centroidal momentum", GRID_REQUIRED, DIM(ONE, 6))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTYS2(GRID_QTY_JACOBIAN, GRID_QTY_WORLD), NO_RATE})
GRID_ROW(CMM_TIME_VARIATION, cmm_time_variation, OWN,
         {"cmm_time_variation", "cmm_time_variation", "",
          "dA/dt, the centroidal momentum matrix's time variation along qd (dccrba's dAg)",
          2, {IN_Q, IN_QD}, 1, {ARG("dA", "centroidal momentum matrix rate", GRID_REQUIRED, DIM(ONE, 6), DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_JACOBIAN_RATE, GRID_ALGO_CCRBA})
GRID_ROW(DCCRBA, dccrba, OWN,
         {"dccrba", "dccrba", "",
          "dA/dq, ccrba's A differentiated along each tangent coordinate: dA[r][j][k] = d A[r][j] / d q_k",
          1, {IN_Q}, 1,
          {ARG("dA", "centroidal momentum matrix derivative", GRID_REQUIRED, DIM(ONE, 6), DIM(NV, 1), DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
GRID_ROW(FRAME_JACOBIAN_DOT, frame_jacobian_dot, OWN,
         {"frame_jacobian_dot", "frame_jacobian_dot", "",
          "dJ/dt of one frame's Jacobian along qd, rows [linear; angular] (getFrameJacobianTimeVariation)",
          2, {IN_Q, IN_QD}, 1, {ARG("dJ", "frame Jacobian rate", GRID_REQUIRED, DIM(ONE, 6), DIM(NV, 1))},
          2, {{"frame", 0, DIM(NFRAMES, 1), "frame id %ld is out of range: the robot has %d frames"},
              {"reference_frame", 0, DIM(ONE, 3),
               "reference_frame id %ld is not WORLD (0), LOCAL (1) or LOCAL_WORLD_ALIGNED (2)"}},
          GRID_GPU_THREAD, NO_LINKS, GRID_QTY_JACOBIAN_RATE, GRID_ALGO_FRAME_JACOBIAN})
/* kinematics for large batches */
GRID_ROW(FK_BATCHED, fk_batched, OWN,
         {"fk_batched", "fk_batched", "",
          "[x y z qw qx qy qz] of the first end effector (the leaf frame), world frame, quaternion with qw >= 0",
          1, {IN_Q}, 1, {ARG("pose", "end-effector position and quaternion", GRID_REQUIRED, DIM(ONE, 7))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_WORLD, NO_RATE})
/* operational-space control */
GRID_ROW(OSC_INERTIA, osc_inertia, OWN,
         {"osc_inertia", "osc_inertia", "",
          "Lambda = (J M^-1 J^T)^-1 of one frame, rows [linear; angular]; directions its chain cannot move "
          "independently get zero rows and columns (docs/python.md)",
          1, {IN_Q}, 1, {ARG("Lambda", "operational-space inertia", GRID_REQUIRED, DIM(ONE, 6), DIM(ONE, 6))},
          2, {{"frame", 0, DIM(NFRAMES, 1), "frame id %ld is out of range: the robot has %d frames"},
              {"reference_frame", 0, DIM(ONE, 3),
               "reference_frame id %ld is not WORLD (0), LOCAL (1) or LOCAL_WORLD_ALIGNED (2)"}},
          GRID_GPU_THREAD, NO_LINKS, GRID_QTY_WORLD, NO_RATE})
/* poses at targets chosen per call: a per-state target [frame id, tool offset x y z in the frame]; the front ends take
   a call's n targets (ee_joint_names, ee_offsets) and run the row on B n states (docs/python.md) */
GRID_ROW(EE_POSE_RUNTIME, ee_pose_runtime, OWN,
         {"ee_pose_runtime", "end_effector_pose_runtime", "",
          "[x y z roll pitch yaw] of a point fixed in a frame, both chosen per call (no rebuild)",
          2, {IN_Q, IN_TARGET}, 1, {ARG("pose", "target poses", GRID_REQUIRED, DIM(ONE, 6))},
          0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_EE_POSE_RUNTIME_GRAD, GRID_ALGO_EE_POSE_RUNTIME_VJP, GRID_QTY_WORLD,
          NO_RATE})
GRID_ROW(EE_POSE_RUNTIME_GRAD, ee_pose_runtime_grad, OWN,
         {"ee_pose_runtime_grad", "end_effector_pose_gradient_runtime", "",
          "d[x y z roll pitch yaw]/dq of a point fixed in a frame, both chosen per call (local tangent; rpy rows "
          "infinite at pitch = +-pi/2)",
          2, {IN_Q, IN_TARGET}, 1, {ARG("dpose", "target pose gradient", GRID_REQUIRED, DIM(ONE, 6), DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
GRID_ROW(EE_POSE_RUNTIME_VJP, ee_pose_runtime_vjp, VJP,
         {"ee_pose_runtime_vjp", "end_effector_pose_runtime_vjp", "",
          "g^T d[x y z roll pitch yaw]/dq of the poses at targets chosen per call, for a cotangent g",
          3, {IN_Q, IN_COTANGENT(DIM(ONE, 6)), IN_TARGET}, 1,
          {ARG("vjp", "cotangent of q", GRID_REQUIRED, DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE})
/* second-order derivatives: [i][j][k] = d/dx_k of the first-order [i][j], q columns along the local tangent, in the
   index order of Pinocchio's ComputeRNEASecondOrderDerivatives */
GRID_ROW(IDSVA_SO, idsva_so, OWN,
         {"idsva_so", "idsva_so", "inverse_dynamics_second_order",
          "[d2tau/dq dq, d2tau/dqd dqd, d2tau/dq dqd, dM/dq] of RNEA at (q, qd, qdd, f_ext), [i][j][k] = "
          "d2tau_i/dx_j dy_k (ComputeRNEASecondOrderDerivatives)",
          4, {IN_Q, IN_QD, IN_QDD_OPT, IN_FEXT_OPT}, 4,
          {OUT_NV3("d2tau_dq2", "second derivative of tau in q"), OUT_NV3("d2tau_dqd2", "second derivative of tau in qd"),
           OUT_NV3("d2tau_dqdqd", "mixed derivative of tau in q and qd"), OUT_NV3("dM_dq", "mass matrix derivative")},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE, .second_order = 1})
GRID_ROW(FDSVA_SO, fdsva_so, OWN,
         {"fdsva_so", "fdsva_so", "forward_dynamics_second_order",
          "[d2qdd/dq dq, d2qdd/dqd dqd, d2qdd/dq dqd, d2qdd/du dq = dMinv/dq] of forward dynamics at (q, qd, u, f_ext), "
          "[i][j][k] = d2qdd_i/dx_j dy_k",
          4, {IN_Q, IN_QD, IN_U, IN_FEXT_OPT}, 4,
          {OUT_NV3("d2qdd_dq2", "second derivative of qdd in q"), OUT_NV3("d2qdd_dqd2", "second derivative of qdd in qd"),
           OUT_NV3("d2qdd_dqdqd", "mixed derivative of qdd in q and qd"),
           OUT_NV3("dMinv_dq", "mixed derivative of qdd in u and q (dMinv/dq)")},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE, .second_order = 1})
GRID_ROW(EE_POSE_HESSIAN, ee_pose_hessian, OWN,
         {"ee_pose_hessian", "end_effector_pose_hessian", "ee_pose_hessian",
          "d2[x y z roll pitch yaw]/dq dq per end effector, [r][j][k] = d/dq_k of end_effector_pose_gradient's [r][j] "
          "(local tangent; rpy rows infinite at pitch = +-pi/2)",
          1, {IN_Q}, 1, {ARG("d2pose", "pose Hessian", GRID_REQUIRED, DIM(NEE, 6), DIM(NV, 1), DIM(NV, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE, .second_order = 1})

/* the transpose of the map the gradients' q columns use (docs/python.md "What the gradients mean"): a cotangent of the
   local tangent onto the nq-wide q, quaternions through their normalisation (the front ends' backward of q) */
GRID_ROW(Q_PULLBACK, q_pullback, OWN,
         {"q_pullback", "q_pullback", "",
          "the cotangent of q (nq wide) of a cotangent of the local tangent (nv wide): the transpose of dq -> the "
          "tangent the gradients' q columns use, quaternions through their normalisation",
          2, {IN_Q, ARG("cotangent", "tangent width", GRID_REQUIRED, DIM(NV, 1))}, 1,
          {ARG("q_cotangent", "cotangent of q", GRID_REQUIRED, DIM(NQ, 1))},
          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED, NO_RATE, .user_coordinates = 1})
