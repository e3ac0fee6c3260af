// refcase.c — reads case.txt and the raw float32 tensors of a reference
// case, and makes the generated inputs of the 0.2 cases.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refcase.h"
#include "util.h"

void refcase_hash_fill(float *x, size_t n, double scale, uint64_t seed)
{
    rng r = { seed };
    for (size_t i = 0; i < n; i++) {
        int32_t k = (int32_t)(rng_u64(&r) >> 40) - (1 << 23);
        // k * 2^-23 is exact in double; one rounding for * scale and one
        // to float, as numpy does in gen_refs_variants.py.
        x[i] = (float)((double)k * 0x1p-23 * scale);
    }
}

uint32_t refcase_crc32(const void *p, size_t n)
{
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    const unsigned char *b = p;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ b[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

// Reads up to max ints from s into v; returns how many.
static int read_ints(const char *s, int *v, int max)
{
    int n = 0, off = 0, used;
    while (n < max && sscanf(s + off, "%d%n", &v[n], &used) == 1) {
        n++;
        off += used;
    }
    return n;
}

static int tensor_index(refcase *rc, const char *name)
{
    for (int i = 0; i < rc->n_tensors; i++)
        if (!strcmp(rc->tensor_name[i], name))
            return i;
    if (rc->n_tensors == REF_MAX_TENSORS)
        return -1;
    int i = rc->n_tensors++;
    snprintf(rc->tensor_name[i], sizeof rc->tensor_name[i], "%.15s", name);
    return i;
}

// "input NAME COUNT SCALE SEED": appends COUNT generated values to NAME.
static int add_input(refcase *rc, const char *rest)
{
    char name[16];
    size_t n;
    double scale;
    unsigned long long seed;
    if (sscanf(rest, "%15s %zu %lf %llu", name, &n, &scale, &seed) != 4)
        return -1;
    int i = tensor_index(rc, name);
    if (i < 0)
        return -1;
    size_t have = rc->tensor_count[i];
    float *p = realloc(rc->tensor[i], (have + n) * sizeof(float));
    if (!p)
        return -1;
    refcase_hash_fill(p + have, n, scale, seed);
    rc->tensor[i] = p;
    rc->tensor_count[i] = have + n;
    return 0;
}

static int parse_dtype(const char *s)
{
    char v[16] = "";
    sscanf(s, "%15s", v);
    return !strcmp(v, "f16") ? 1 : !strcmp(v, "bf16") ? 2
         : !strcmp(v, "f32") ? 0 : -1;
}

int refcase_load_in(const char *dir, const char *name, refcase *rc)
{
    memset(rc, 0, sizeof *rc);
    snprintf(rc->name, sizeof rc->name, "%s", name);
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s/case.txt", dir, name);
    FILE *f = fopen(data_path(rel), "r");
    if (!f) {
        snprintf(rc->error, sizeof rc->error, "cannot open %s", rel);
        return -1;
    }
    enum { MAX_CRC = 8 };
    char crc_name[MAX_CRC][16];
    unsigned crc_want[MAX_CRC];
    int n_crc = 0, stored[REF_MAX_TENSORS] = { 0 }, bad = 0;
    char line[4096];
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
        else if (!strcmp(key, "Hkv")) rc->Hkv = atoi(rest);
        else if (!strcmp(key, "rope_dim")) rc->rope_dim = atoi(rest);
        else if (!strcmp(key, "rope_theta"))
            rc->rope_theta = (float)atof(rest);
        else if (!strcmp(key, "rope_interleaved"))
            rc->rope_interleaved = atoi(rest);
        else if (!strcmp(key, "window")) rc->window = atoi(rest);
        else if (!strcmp(key, "pos0")) rc->pos0 = atoi(rest);
        else if (!strcmp(key, "kv_dtype")) {
            rc->kv_dtype = parse_dtype(rest);
            bad |= rc->kv_dtype < 0;
        } else if (!strcmp(key, "seq_len")) {
            rc->has_seq_len = 1;
            read_ints(rest, rc->seq_len, REF_MAX_B);
        } else if (!strcmp(key, "attn_rows"))
            rc->n_attn_rows = read_ints(rest, rc->attn_rows, REF_MAX_ROWS);
        else if (!strcmp(key, "dead_rows"))
            rc->n_dead_rows = read_ints(rest, rc->dead_rows, REF_MAX_DEAD);
        else if (!strcmp(key, "masked_rows"))
            rc->n_masked_rows = read_ints(rest, rc->masked_rows, 64);
        else if (!strcmp(key, "input"))
            bad |= add_input(rc, rest) != 0;
        else if (!strcmp(key, "crc") && n_crc < MAX_CRC)
            n_crc += sscanf(rest, "%15s %x", crc_name[n_crc],
                            &crc_want[n_crc]) == 2;
        else if (!strcmp(key, "tensor")) {
            char tn[16];
            size_t cnt;
            int i;
            if (sscanf(rest, "%15s %zu", tn, &cnt) != 2 ||
                (i = tensor_index(rc, tn)) < 0 || rc->tensor_count[i]) {
                bad = 1;
                continue;
            }
            rc->tensor_count[i] = cnt;
            stored[i] = 1;
        }
    }
    fclose(f);
    if (bad) {
        snprintf(rc->error, sizeof rc->error, "%s: bad line in case.txt",
                 name);
        return -1;
    }
    if (!rc->Hkv)
        rc->Hkv = rc->H;
    for (int i = 0; i < rc->n_tensors; i++) {
        if (!stored[i])
            continue;
        snprintf(rel, sizeof rel, "%s/%s/%s.bin", dir, name,
                 rc->tensor_name[i]);
        rc->tensor[i] = read_f32(rel, rc->tensor_count[i]);
        if (!rc->tensor[i]) {
            snprintf(rc->error, sizeof rc->error, "cannot read %zu floats "
                     "from %s", rc->tensor_count[i], rel);
            return -1;
        }
    }
    // A generated input that differs from Python's would make every
    // comparison fail for a reason that has nothing to do with the library.
    for (int c = 0; c < n_crc; c++) {
        int i = tensor_index(rc, crc_name[c]);
        uint32_t got = i < 0 ? 0 : refcase_crc32(rc->tensor[i],
                                       rc->tensor_count[i] * sizeof(float));
        if (i < 0 || got != crc_want[c]) {
            snprintf(rc->error, sizeof rc->error, "%s: generated input %s "
                     "has crc32 %08x, the generator wrote %08x", name,
                     crc_name[c], (unsigned)got, crc_want[c]);
            return -1;
        }
    }
    if (!(rc->B > 0 && rc->T > 0 && rc->D > 0 && rc->H > 0 && rc->tol > 0)) {
        snprintf(rc->error, sizeof rc->error, "%s: incomplete case.txt",
                 name);
        return -1;
    }
    return 0;
}

int refcase_load(const char *name, refcase *rc)
{
    return refcase_load_in("refs", name, rc);
}

const float *refcase_get(const refcase *rc, const char *name)
{
    for (int i = 0; i < rc->n_tensors; i++)
        if (!strcmp(rc->tensor_name[i], name))
            return rc->tensor[i];
    return NULL;
}

size_t refcase_count(const refcase *rc, const char *name)
{
    for (int i = 0; i < rc->n_tensors; i++)
        if (!strcmp(rc->tensor_name[i], name))
            return rc->tensor_count[i];
    return 0;
}

void refcase_free(refcase *rc)
{
    for (int i = 0; i < rc->n_tensors; i++)
        free(rc->tensor[i]);
    memset(rc, 0, sizeof *rc);
}
