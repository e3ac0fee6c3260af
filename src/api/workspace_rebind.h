// workspace_rebind.h — one workspace for many blocks of one config, for the
// models above the API (src/models/llama) that need it without the objects' layout.
#ifndef MHSA_API_WORKSPACE_REBIND_H
#define MHSA_API_WORKSPACE_REBIND_H

#include "mhsa.h"

// Points ws, made for another block of exactly the same config, at blk
// (forgetting any forward it saved), so that the layers of a model share
// one workspace (src/models/llama): a workspace is sized by the config alone.
// Another config: MHSA_ERR_INVALID_ARG.
mhsa_status mhsa__workspace_rebind(mhsa_workspace *ws, const mhsa_block *blk);

#endif
