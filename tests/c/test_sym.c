/* The symbolic engine's chunked and subset emission (CUDA wide outputs, split pieces): compiled with cc and compared with the plain form. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "../../src/emit/sym.h"
#include "../../src/emit/writer.h"

#define WIDTH 77 /* three chunks of 32, the last partial */
#define CHUNK 32

static const sym_style style = {"double", 0, "sqrt", "sin", "cos", "atan2", NULL, NULL, NULL, "", "    ", "fabs"};

/* a graph of the shape CRBA has: values made along the way, each stored at two mirrored places in scrambled
   order, some constants, one element stored twice (the last store wins), inputs stored directly */
static sym_graph *make_graph(void)
{
    sym_graph *g = sym_new();
    const int q = sym_array(g, "q", 0), out = sym_array(g, "out", 0);
    sv acc = sym_input(g, q, 0);
    int stored[WIDTH] = {0};
    for (int k = 0; k < 30; k++) {
        acc = sym_add(g, sym_mul(g, acc, sym_sin(g, sym_input(g, q, k % 3))), sym_const(g, 0.25 * k));
        const int i = (k * 37) % WIDTH, j = WIDTH - 1 - i;
        sym_store(g, out, i, acc);
        sym_store(g, out, j, sym_neg(g, acc));
        stored[i] = stored[j] = 1;
    }
    sym_store(g, out, 5, sym_input(g, q, 2));
    stored[5] = 1;
    sym_store(g, out, 5, sym_mul(g, acc, acc)); /* overwrites the input stored just before */
    for (int k = 0; k < WIDTH; k++)
        if (!stored[k]) sym_store(g, out, k, k % 2 ? sym_const(g, 0.0) : sym_input(g, q, 1));
    return g;
}

typedef void (*fn_t)(const double *q, double *out);

#define PIECES 3 /* subsets: element k in piece k % PIECES */

/* the plain form, the chunked form (its flush copies the chunk into the full array) and the PIECES subsets
   (piece0 ..) in one library */
static void *build(const sym_graph *g, const sym_chunks *ch)
{
    ew_writer w;
    ew_init(&w);
    ew_puts(&w, "#include <math.h>\n#include <string.h>\nvoid plain(const double *q, double *out)\n{\n");
    CHECK(sym_emit(g, &style, &w, NULL) == 0);
    ew_puts(&w, "}\n#define FLUSH(f, n) memcpy(full + (f), chunk, (size_t)(n) * sizeof(double)); nflush++\n"
                "int nflush;\nvoid chunked(const double *q, double *full)\n{\n    double chunk[32];\n");
    CHECK(sym_emit_chunked(g, &style, &w, NULL, ch) == 0);
    ew_puts(&w, "}\n");
    for (int p = 0; p < PIECES; p++) {
        unsigned char keep[WIDTH];
        for (int k = 0; k < WIDTH; k++) keep[k] = (unsigned char)(k % PIECES == p);
        const sym_subset sub = {"out", keep};
        ew_printf(&w, "void piece%d(const double *q, double *out)\n{\n", p);
        CHECK(sym_emit_subset(g, &style, &w, NULL, &sub) == 0);
        ew_puts(&w, "}\n");
    }
    char dir[] = "/tmp/grid-test-sym-XXXXXX", c[96], so[96], cmd[512];
    if (!mkdtemp(dir)) return NULL;
    snprintf(c, sizeof c, "%s/t.c", dir);
    snprintf(so, sizeof so, "%s/t.so", dir);
    FILE *f = fopen(c, "wb");
    if (!f) return NULL;
    fwrite(w.buf, 1, w.len, f);
    fclose(f);
    ew_free(&w);
    snprintf(cmd, sizeof cmd, "cc -O1 -Wall -Werror -fPIC -shared %s -o %s -lm", c, so);
    void *dl = system(cmd) == 0 ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
    unlink(c);
    unlink(so);
    rmdir(dir);
    return dl;
}

static void test_chunked_matches_plain(void)
{
    sym_graph *g = make_graph();
    const sym_chunks ch = {"out", CHUNK, "chunk", "FLUSH(%d, %d);"};
    CHECK(sym_chunk_width(g, &ch) == WIDTH);
    void *dl = build(g, &ch);
    CHECK(dl != NULL);
    if (dl) {
        fn_t plain = (fn_t)dlsym(dl, "plain"), chunked = (fn_t)dlsym(dl, "chunked");
        int *nflush = (int *)dlsym(dl, "nflush");
        const double q[3] = {0.3, -1.1, 2.2};
        double a[WIDTH], b[WIDTH];
        for (int k = 0; k < WIDTH; k++) a[k] = b[k] = NAN;
        plain(q, a);
        chunked(q, b);
        for (int k = 0; k < WIDTH; k++) CHECK_MSG(a[k] == b[k], "element %d: %g vs %g", k, a[k], b[k]);
        CHECK(*nflush == (WIDTH + CHUNK - 1) / CHUNK); /* each chunk once */
        dlclose(dl);
    }
    sym_free(g);
}

/* each subset writes exactly its elements, with the plain form's values (the overwritten element's last store
   included), and its operations are the ones those need (fewer than the whole for a piece without the last value) */
static void test_subsets_match_plain(void)
{
    sym_graph *g = make_graph();
    const sym_chunks ch = {"out", CHUNK, "chunk", "FLUSH(%d, %d);"};
    void *dl = build(g, &ch);
    CHECK(dl != NULL);
    const double q[3] = {0.7, -0.4, 1.3};
    double a[WIDTH];
    for (int k = 0; k < WIDTH; k++) a[k] = NAN;
    if (dl) ((fn_t)dlsym(dl, "plain"))(q, a);
    unsigned char all[WIDTH], none[WIDTH];
    memset(all, 1, sizeof all);
    memset(none, 0, sizeof none);
    const long whole = sym_subset_ops(g, &(sym_subset){"out", all});
    CHECK(whole > 30 && sym_subset_ops(g, &(sym_subset){"out", none}) == 0);
    int fewer = 0;
    for (int p = 0; p < PIECES && dl; p++) {
        char name[24];
        snprintf(name, sizeof name, "piece%d", p);
        fn_t piece = (fn_t)dlsym(dl, name);
        double b[WIDTH];
        for (int k = 0; k < WIDTH; k++) b[k] = NAN;
        piece(q, b);
        for (int k = 0; k < WIDTH; k++) {
            if (k % PIECES == p) CHECK_MSG(a[k] == b[k], "piece %d element %d: %g vs %g", p, k, b[k], a[k]);
            else CHECK_MSG(isnan(b[k]), "piece %d wrote element %d", p, k);
        }
        unsigned char keep[WIDTH];
        for (int k = 0; k < WIDTH; k++) keep[k] = (unsigned char)(k % PIECES == p);
        const long ops = sym_subset_ops(g, &(sym_subset){"out", keep});
        CHECK_MSG(ops > 0 && ops <= whole, "piece %d: %ld operations of %ld", p, ops, whole);
        fewer += ops < whole;
    }
    CHECK(fewer > 0);
    /* the element stored last in the graph (the final acc * acc at 5) needs every step */
    unsigned char five[WIDTH] = {0};
    five[5] = 1;
    CHECK(sym_subset_ops(g, &(sym_subset){"out", five}) == whole);
    if (dl) dlclose(dl);
    sym_free(g);
}

/* a chunk is written right after the last value it needs: the chunk of an early value flushes before the
   late values are computed */
static void test_chunk_flushes_early(void)
{
    sym_graph *g = sym_new();
    const int q = sym_array(g, "q", 0), out = sym_array(g, "out", 0);
    sv early = sym_sin(g, sym_input(g, q, 0)), late = sym_cos(g, sym_input(g, q, 1));
    late = sym_mul(g, late, late);
    for (int k = 0; k < 32; k++) sym_store(g, out, k, early);
    for (int k = 32; k < 64; k++) sym_store(g, out, k, late);
    const sym_chunks ch = {"out", 32, "chunk", "FLUSH(%d, %d);"};
    ew_writer w;
    ew_init(&w);
    CHECK(sym_emit_chunked(g, &style, &w, NULL, &ch) == 0);
    ew_puts(&w, "");
    const char *f0 = strstr(w.buf, "FLUSH(0, 32);"), *c = strstr(w.buf, "cos("), *f1 = strstr(w.buf, "FLUSH(32, 32);");
    CHECK(f0 && c && f1 && f0 < c && c < f1);
    ew_free(&w);
    sym_free(g);
}

/* graphs that do not suit chunks: raw code, the array read back, an element never stored */
static void test_not_chunkable(void)
{
    const sym_chunks ch = {"out", 32, "chunk", "FLUSH(%d, %d);"};
    sym_graph *g = sym_new();
    int q = sym_array(g, "q", 0), out = sym_array(g, "out", 0);
    sym_store(g, out, 0, sym_input(g, q, 0));
    sym_store(g, out, 1, sym_input(g, q, 1));
    CHECK(sym_chunk_width(g, &ch) == 2);
    sym_raw(g, "    for (int i = 0; i < 2; i++) out[i] *= 2;\n");
    CHECK(sym_chunk_width(g, &ch) == 0);
    sym_free(g);

    g = sym_new();
    q = sym_array(g, "q", 0);
    out = sym_array(g, "out", 0);
    sym_store(g, out, 0, sym_input(g, q, 0));
    sym_store(g, out, 1, sym_input(g, out, 0));
    CHECK(sym_chunk_width(g, &ch) == 0);
    sym_free(g);

    g = sym_new();
    q = sym_array(g, "q", 0);
    out = sym_array(g, "out", 0);
    sym_store(g, out, 0, sym_input(g, q, 0));
    sym_store(g, out, 2, sym_input(g, q, 1)); /* element 1 is never written */
    CHECK(sym_chunk_width(g, &ch) == 0);
    CHECK(sym_chunk_width(g, &(sym_chunks){"nothere", 32, "chunk", "F(%d,%d);"}) == 0);
    sym_free(g);
}

int main(void)
{
    RUN_TEST(test_chunked_matches_plain);
    RUN_TEST(test_chunk_flushes_early);
    RUN_TEST(test_subsets_match_plain);
    RUN_TEST(test_not_chunkable);
    return check_summary("test_sym");
}
