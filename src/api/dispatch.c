// dispatch.c — the public face of the kernel choice: mhsa_select_isa and
// mhsa_active_isa over the kernels layer's dispatch (src/kernels/dispatch.c),
// which holds the tables, the CPU checks and the select-once state.
#include "core/status.h"
#include "kernels/kernels.h"

mhsa_status mhsa_select_isa(mhsa_isa isa)
{
    const mhsa_kernels *k;
    if (isa == MHSA_ISA_AUTO) {
        k = mhsa__best_table();
    } else if (isa < MHSA_ISA_AUTO || isa > MHSA_ISA_LAST) {
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_select_isa: isa = %d is not an mhsa_isa",
                          (int)isa);
    } else if (!(k = mhsa_kernels_for(isa))) {
        return mhsa__fail(MHSA_ERR_UNSUPPORTED,
                          "mhsa_select_isa: isa = %s is not available (%s)",
                          mhsa_isa_name(isa),
                          mhsa__fixed_table(isa) ? "this CPU lacks it"
                                                 : "not in this build");
    }
    mhsa__set_active(k);
    return MHSA_OK;
}

mhsa_isa mhsa_active_isa(void) { return mhsa__kernels()->isa; }
