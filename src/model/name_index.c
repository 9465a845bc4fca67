/* Sorted name -> index lookup, used to resolve link and joint names and to find duplicates. */
#include <stdlib.h>
#include <string.h>
#include "robot_desc.h"

typedef struct {
    const char *name;
    int index;
} name_entry;

/* byte order of names (std::map<std::string> order), ties by file position */
static int entry_cmp(const void *a, const void *b)
{
    const name_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return (x->index > y->index) - (x->index < y->index);
}

int grid_name_index_build(grid_name_index *ix, const void *base, size_t stride, size_t name_offset,
                          int n, int *dup_a, int *dup_b)
{
    memset(ix, 0, sizeof *ix);
    name_entry *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e);
    if (!e) return GRID_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        const char *elem = (const char *)base + (size_t)i * stride;
        memcpy(&e[i].name, elem + name_offset, sizeof(const char *));
        e[i].index = i;
    }
    qsort(e, (size_t)n, sizeof *e, entry_cmp);

    // equal neighbours are duplicates; report the pair whose second one comes first in the file
    int best = -1;
    for (int i = 1; i < n; i++)
        if (strcmp(e[i - 1].name, e[i].name) == 0 && (best < 0 || e[i].index < e[best].index)) best = i;
    if (best >= 0) {
        int k = best;
        while (k > 0 && strcmp(e[k - 1].name, e[best].name) == 0) k--;
        *dup_a = e[k].index;
        *dup_b = e[best].index;
        free(e);
        return GRID_ERR_URDF;
    }

    ix->names = malloc((size_t)(n > 0 ? n : 1) * sizeof *ix->names);
    ix->index = malloc((size_t)(n > 0 ? n : 1) * sizeof *ix->index);
    if (!ix->names || !ix->index) {
        free(e);
        grid_name_index_free(ix);
        return GRID_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        ix->names[i] = e[i].name;
        ix->index[i] = e[i].index;
    }
    ix->n = n;
    free(e);
    return GRID_OK;
}

int grid_name_index_find(const grid_name_index *ix, const char *name)
{
    if (!name) return -1;
    int lo = 0, hi = ix->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, ix->names[mid]);
        if (c == 0) return ix->index[mid];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return -1;
}

void grid_name_index_free(grid_name_index *ix)
{
    free(ix->names);
    free(ix->index);
    memset(ix, 0, sizeof *ix);
}
