/* The cotangent of q from a cotangent of the local tangent, joint by joint, written verbatim into generated code. */
/*
 * The generic composite writer (template.c) defines GRID_EL_(p, k), GRID_SQRT_, GRID_SIN_, GRID_COS_ and
 * GRID_QMAP_BODY_: the user's joints with coordinates of their own as GRID_QMAP_RUN_(iq, iv, n) (n one-coordinate
 * joints from q[iq] and v[iv]: the identity), GRID_QMAP_FREE_(iq, iv), GRID_QMAP_SPHERICAL_(iq, iv) and
 * GRID_QMAP_PLANAR_(iq, iv). The map it transposes (docs/python.md "What the gradients mean"): free: [R^T dp; the
 * normalised quaternion's angular velocity]; spherical: that angular velocity; planar [x, y, theta]:
 * [R(theta)^T [dx, dy]; dtheta]. For u = quat / |quat| = (v, w), omega = 2 vec(conj(u) du) = A du with
 * A = 2 [w I - [v]x | -v] and du = (I - u u^T) dquat / |quat|, so dquat's cotangent is (I - u u^T) A^T c / |quat|,
 * A^T c = 2 [w c + v x c; -v . c]; dp's is R c_lin = c + w t + v x t, t = 2 v x c_lin. A mimic joint has no
 * coordinates of its own: every user coordinate is some independent joint's.
 */
#define GRID_QMAP_RUN_(iq, iv, n) \
    for (int k_ = 0; k_ < (n); k_++) GRID_EL_(out, (iq) + k_) = GRID_EL_(g, (iv) + k_);
/* u = quat / |quat| (ux, uy, uz, uw) and in_ = 1 / |quat| of the quaternion at q[iq..iq+3] */
#define GRID_QMAP_UNIT_(iq)                                                                                       \
    const grid_real x_ = GRID_EL_(q, (iq)), y_ = GRID_EL_(q, (iq) + 1), z_ = GRID_EL_(q, (iq) + 2),               \
                    w_ = GRID_EL_(q, (iq) + 3);                                                                   \
    const grid_real in_ = 1 / GRID_SQRT_(x_ * x_ + y_ * y_ + z_ * z_ + w_ * w_);                                  \
    const grid_real ux = x_ * in_, uy = y_ * in_, uz = z_ * in_, uw = w_ * in_;
/* the quaternion's block at out[iq..iq+3] of the angular cotangent at g[iv..iv+2], after GRID_QMAP_UNIT_(iq) */
#define GRID_QMAP_QUAT_BLOCK_(iq, iv)                                                                             \
    {                                                                                                             \
        const grid_real cx = GRID_EL_(g, (iv)), cy = GRID_EL_(g, (iv) + 1), cz = GRID_EL_(g, (iv) + 2);           \
        const grid_real gx = 2 * (uw * cx + uy * cz - uz * cy), gy = 2 * (uw * cy + uz * cx - ux * cz),           \
                        gz = 2 * (uw * cz + ux * cy - uy * cx), gw = -2 * (ux * cx + uy * cy + uz * cz);          \
        const grid_real d_ = ux * gx + uy * gy + uz * gz + uw * gw;                                               \
        GRID_EL_(out, (iq)) = (gx - ux * d_) * in_;                                                               \
        GRID_EL_(out, (iq) + 1) = (gy - uy * d_) * in_;                                                           \
        GRID_EL_(out, (iq) + 2) = (gz - uz * d_) * in_;                                                           \
        GRID_EL_(out, (iq) + 3) = (gw - uw * d_) * in_;                                                           \
    }
#define GRID_QMAP_FREE_(iq, iv)                                                                                   \
    {                                                                                                             \
        GRID_QMAP_UNIT_((iq) + 3)                                                                                 \
        const grid_real lx = GRID_EL_(g, (iv)), ly = GRID_EL_(g, (iv) + 1), lz = GRID_EL_(g, (iv) + 2);           \
        const grid_real tx = 2 * (uy * lz - uz * ly), ty = 2 * (uz * lx - ux * lz), tz = 2 * (ux * ly - uy * lx); \
        GRID_EL_(out, (iq)) = lx + uw * tx + (uy * tz - uz * ty);                                                 \
        GRID_EL_(out, (iq) + 1) = ly + uw * ty + (uz * tx - ux * tz);                                             \
        GRID_EL_(out, (iq) + 2) = lz + uw * tz + (ux * ty - uy * tx);                                             \
        GRID_QMAP_QUAT_BLOCK_((iq) + 3, (iv) + 3)                                                                 \
    }
#define GRID_QMAP_SPHERICAL_(iq, iv)                                                                              \
    {                                                                                                             \
        GRID_QMAP_UNIT_(iq)                                                                                       \
        GRID_QMAP_QUAT_BLOCK_(iq, iv)                                                                             \
    }
#define GRID_QMAP_PLANAR_(iq, iv)                                                                                 \
    {                                                                                                             \
        const grid_real c_ = GRID_COS_(GRID_EL_(q, (iq) + 2)), s_ = GRID_SIN_(GRID_EL_(q, (iq) + 2));             \
        const grid_real a_ = GRID_EL_(g, (iv)), b_ = GRID_EL_(g, (iv) + 1);                                       \
        GRID_EL_(out, (iq)) = c_ * a_ - s_ * b_;                                                                  \
        GRID_EL_(out, (iq) + 1) = s_ * a_ + c_ * b_;                                                              \
        GRID_EL_(out, (iq) + 2) = GRID_EL_(g, (iv) + 2);                                                          \
    }
    (void)q; (void)g; (void)out; (void)ws; (void)frame; (void)rf; /* (q: read at quaternion and planar joints only) */
    GRID_QMAP_BODY_
#undef GRID_QMAP_RUN_
#undef GRID_QMAP_UNIT_
#undef GRID_QMAP_QUAT_BLOCK_
#undef GRID_QMAP_FREE_
#undef GRID_QMAP_SPHERICAL_
#undef GRID_QMAP_PLANAR_
