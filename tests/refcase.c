// refcase.c — reads case.txt and the raw float32 tensors of a reference case.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refcase.h"
#include "util.h"

int refcase_load(const char *name, refcase *rc)
{
    memset(rc, 0, sizeof *rc);
    snprintf(rc->name, sizeof rc->name, "%s", name);
    char rel[256];
    snprintf(rel, sizeof rel, "refs/%s/case.txt", name);
    FILE *f = fopen(data_path(rel), "r");
    if (!f)
        return -1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char key[32];
        if (line[0] == '#' || sscanf(line, "%31s", key) != 1)
            continue;
        const char *rest = line + strlen(key);
        if (!strcmp(key, "kind"))
            sscanf(rest, "%15s", rc->kind);
        else if (!strcmp(key, "B")) rc->B = atoi(rest);
        else if (!strcmp(key, "T")) rc->T = atoi(rest);
        else if (!strcmp(key, "D")) rc->D = atoi(rest);
        else if (!strcmp(key, "H")) rc->H = atoi(rest);
        else if (!strcmp(key, "causal")) rc->causal = atoi(rest);
        else if (!strcmp(key, "bias")) rc->bias = atoi(rest);
        else if (!strcmp(key, "tol")) rc->tol = atof(rest);
        else if (!strcmp(key, "masked_rows")) {
            int off = 0, v, used;
            while (rc->n_masked_rows < 64 &&
                   sscanf(rest + off, "%d%n", &v, &used) == 1) {
                rc->masked_rows[rc->n_masked_rows++] = v;
                off += used;
            }
        } else if (!strcmp(key, "tensor") && rc->n_tensors < REF_MAX_TENSORS) {
            int i = rc->n_tensors;
            if (sscanf(rest, "%15s %zu", rc->tensor_name[i],
                       &rc->tensor_count[i]) == 2)
                rc->n_tensors++;
        }
    }
    fclose(f);
    for (int i = 0; i < rc->n_tensors; i++) {
        snprintf(rel, sizeof rel, "refs/%s/%s.bin", name, rc->tensor_name[i]);
        rc->tensor[i] = read_f32(rel, rc->tensor_count[i]);
        if (!rc->tensor[i])
            return -1;
    }
    return rc->B > 0 && rc->T > 0 && rc->D > 0 && rc->H > 0 && rc->tol > 0
           ? 0 : -1;
}

const float *refcase_get(const refcase *rc, const char *name)
{
    for (int i = 0; i < rc->n_tensors; i++)
        if (!strcmp(rc->tensor_name[i], name))
            return rc->tensor[i];
    return NULL;
}

void refcase_free(refcase *rc)
{
    for (int i = 0; i < rc->n_tensors; i++)
        free(rc->tensor[i]);
    memset(rc, 0, sizeof *rc);
}
