/* mhsa_model — a pretrained language model from its GGUF file: load it,
 * read what it is, turn text into token ids and back, run sequences of
 * tokens through it with a KV cache each, and sample the next token.
 *
 * The architectures are those mhsa runs (docs/models.md): "llama" (Llama
 * 2 and 3, SmolLM, TinyLlama, Mistral), "qwen2" and "gemma3". The
 * tokenizers are the file's own, giving llama.cpp's ids (byte-level BPE
 * and SentencePiece).
 *
 *   mhsa_model *m;   mhsa_seq *s;   mhsa_sampler *smp;
 *   mhsa_model_load("model.gguf", NULL, &m);
 *   mhsa_tokenize(m, text, strlen(text), MHSA_TOKENIZE_ADD_SPECIAL,
 *                 ids, cap, &n);
 *   mhsa_seq_create(m, MHSA_F32, &s);
 *   mhsa_seq_eval(s, ids, n, MHSA_LOGITS_LAST, logits, n_vocab);
 *   mhsa_sampler_sample(smp, logits, n_vocab, NULL, 0, &next);
 *
 * Errors follow mhsa.h: every call that can fail returns an mhsa_status,
 * mhsa_last_error() names the bad argument and its value, a failing call
 * changes nothing the caller passed in (buffers, sequences, samplers), and
 * NULL objects or buffers are refused with MHSA_ERR_INVALID_ARG (except
 * where a description below allows them). Every *_destroy and *_reset
 * accepts NULL as a no-op; queries on a NULL object return 0, -1 or NULL
 * as each says.
 *
 * Buffers of results (token ids, text) follow snprintf: the call reports
 * the size it needed in *n or *len whether or not it fitted. When it does
 * not fit, the status is MHSA_ERR_SHAPE and the buffer is untouched; a
 * NULL buffer with a capacity of 0 asks for the size alone (also
 * MHSA_ERR_SHAPE, unless mhsa_tokenize's result is empty).
 *
 * Threads. OpenMP computes each evaluation, as everywhere in mhsa:
 * OMP_NUM_THREADS (or omp_set_num_threads) says how many threads, and the
 * logits are the same bits on any number of them.
 *  - A model is shared: once loaded, any number of threads may use it at
 *    once for the queries, tokenize, detokenize and chat_apply
 *    (read-only), and for the evaluation of its sequences (mhsa_seq_eval,
 *    mhsa_batch_eval). The model holds one set of
 *    activation buffers, so evaluations of the same model run one at a time
 *    (a lock inside the model orders them; their results do not depend on
 *    that order). For evaluations in parallel, load the model once per
 *    thread. mhsa_model_free must not run while another call uses the
 *    model or any of its sequences, and the sequences must be destroyed
 *    first.
 *  - A sequence and a sampler are used by one thread at a time (any
 *    thread, not two at once).
 *  - Calls on different sequences and samplers never share state, so
 *    their results depend only on their own inputs: two sequences
 *    evaluated interleaved give the bits each gives alone.
 */
#ifndef MHSA_MODEL_H
#define MHSA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mhsa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Loading ------------------------------------------------------------ */

typedef struct mhsa_model mhsa_model;

/* How the large matrices (attention, MLP, embedding, output) are held. */
typedef enum mhsa_model_weights {
    MHSA_WEIGHTS_AS_STORED = 0, /* the file's types, read from a read-only
                                   mapping of the file (Q8_0, Q4_0, Q4_1,
                                   Q5_0, Q5_1, Q4_K, Q5_K, Q6_K computed on
                                   their blocks, rearranged once at load
                                   where the CPU's kernels read them
                                   faster so (docs/models.md), at the
                                   same size; F32, F16, BF16 as they
                                   are; Q2_K, Q3_K, IQ4_NL, IQ4_XS
                                   converted to Q8_0 at load) */
    MHSA_WEIGHTS_F32,           /* dequantized to fp32 at load */
    MHSA_WEIGHTS_F16,           /* dequantized, rounded to IEEE binary16 */
    MHSA_WEIGHTS_BF16           /* dequantized, rounded to bfloat16 */
} mhsa_model_weights;

/* Zero-initialise; a zero field is the default. */
typedef struct mhsa_model_params {
    int weights;      /* an mhsa_model_weights (default: as stored) */
    int context;      /* positions each sequence holds (prompt and
                         generated tokens), 1 .. the file's context
                         length; 0: min(context length, 4096) */
    int vocab_only;   /* 1: read the metadata and the tokenizer only, no
                         weights (fast; mhsa_seq_create then fails with
                         MHSA_ERR_STATE); mhsa_model_n_ctx is the file's
                         context length then */
} mhsa_model_params;

/* Loads the model at path; params NULL means all defaults. Errors:
 * MHSA_ERR_IO (the file cannot be read), MHSA_ERR_FORMAT naming the key or
 * tensor (not a GGUF file, an architecture mhsa does not run, a missing
 * or misshapen tensor), MHSA_ERR_UNSUPPORTED (a tokenizer of another
 * kind), MHSA_ERR_INVALID_ARG (weights, context or vocab_only out of
 * range), MHSA_ERR_NO_MEMORY (also when the weights would not fit in the
 * machine's memory). The kernels are those active at load
 * (mhsa_select_isa first to force one). */
MHSA_API mhsa_status mhsa_model_load(const char *path,
                                     const mhsa_model_params *params,
                                     mhsa_model **out);
MHSA_API void mhsa_model_free(mhsa_model *m);   /* NULL: no-op */

/* ---- What the model is (0, -1 or NULL for a NULL model) ----------------- */

/* general.architecture: "llama", "qwen2" or "gemma3". Valid as long as
 * m. */
MHSA_API const char *mhsa_model_arch(const mhsa_model *m);
/* Token ids are 0 .. n_vocab - 1; logits rows have n_vocab floats. */
MHSA_API int mhsa_model_n_vocab(const mhsa_model *m);
/* Positions a sequence of this model holds (params.context). */
MHSA_API int mhsa_model_n_ctx(const mhsa_model *m);
/* The context length the model was trained for (<arch>.context_length). */
MHSA_API int mhsa_model_n_ctx_train(const mhsa_model *m);
/* The beginning- and end-of-sequence tokens, -1 when the file has none. */
MHSA_API int32_t mhsa_model_bos(const mhsa_model *m);
MHSA_API int32_t mhsa_model_eos(const mhsa_model *m);
/* 1 when the tokenizer puts BOS first (EOS last) with
 * MHSA_TOKENIZE_ADD_SPECIAL, as the file says (or llama.cpp's default). */
MHSA_API int mhsa_model_adds_bos(const mhsa_model *m);
MHSA_API int mhsa_model_adds_eos(const mhsa_model *m);
/* 1 when generation ends at token: EOS, end of turn, or a token spelled as
 * one of llama.cpp's end-of-generation texts ("<|im_end|>", ...); 0 for
 * any other value. */
MHSA_API int mhsa_model_is_eog(const mhsa_model *m, int32_t token);
/* tokenizer.chat_template (a Jinja template), or NULL when the file has
 * none. NUL-terminated, valid as long as m. */
MHSA_API const char *mhsa_model_chat_template(const mhsa_model *m);
/* Bytes the weights take as held (0 with vocab_only), and their types for
 * messages: "f32", "f16", "bf16", or as stored the types by the bytes they
 * take, most first ("q4_K/q6_K"); "" with vocab_only. */
MHSA_API size_t mhsa_model_weight_bytes(const mhsa_model *m);
MHSA_API const char *mhsa_model_weight_types(const mhsa_model *m);

/* ---- Text and tokens ---------------------------------------------------- */

enum {
    MHSA_TOKENIZE_ADD_SPECIAL = 1,   /* BOS first (and EOS last) as the
                                        model adds them */
    MHSA_TOKENIZE_PARSE_SPECIAL = 2  /* control tokens' text in the text
                                        ("<|im_start|>") is that token;
                                        else it is plain text */
};

/* Encodes text[0..len) (UTF-8; it may hold NUL bytes) into ids[0..*n).
 * *n is always the number of ids the text takes; ids may be NULL when cap
 * is 0. Errors: NULL m, text, or n, ids NULL with cap > 0, unknown flags,
 * text that is not valid UTF-8 (naming the byte offset and value):
 * MHSA_ERR_INVALID_ARG; cap < *n: MHSA_ERR_SHAPE (ids untouched). */
MHSA_API mhsa_status mhsa_tokenize(const mhsa_model *m, const char *text,
                                   size_t len, unsigned flags, int32_t *ids,
                                   size_t cap, size_t *n);

enum {
    MHSA_DETOKENIZE_SPECIAL = 1,     /* control tokens as their text (else
                                        they give nothing) */
    MHSA_DETOKENIZE_STRIP_SPACE = 2  /* drop the leading space a
                                        SentencePiece vocabulary puts
                                        before ids[0] */
};

/* The text of ids[0..n) (bytes, which may be incomplete UTF-8 when the
 * ids end inside a character), written to buf with a NUL after it: *len
 * is its length without the NUL, and it fits when cap >= *len + 1, as
 * snprintf. A piece of one token is n = 1. Errors: NULL m or len, ids NULL
 * with n > 0, buf NULL with cap > 0, unknown flags, an id outside [0,
 * n_vocab): MHSA_ERR_INVALID_ARG; cap <= *len: MHSA_ERR_SHAPE (buf
 * untouched). Decoding an encoding gives the text back byte for byte, but
 * for a SentencePiece space prefix (STRIP_SPACE) and bytes the vocabulary
 * has no token for. */
MHSA_API mhsa_status mhsa_detokenize(const mhsa_model *m, const int32_t *ids,
                                     size_t n, unsigned flags, char *buf,
                                     size_t cap, size_t *len);

/* ---- Sequences ---------------------------------------------------------- */

typedef struct mhsa_seq mhsa_seq;

/* A sequence of m: its tokens' keys and values (a KV cache of
 * mhsa_model_n_ctx positions, stored as kv_dtype: MHSA_F32, MHSA_F16 or
 * MHSA_BF16). Allocated here, once; evaluation allocates nothing. Errors:
 * MHSA_ERR_INVALID_ARG (NULL, kv_dtype), MHSA_ERR_STATE (a vocab_only
 * model), MHSA_ERR_NO_MEMORY. */
MHSA_API mhsa_status mhsa_seq_create(mhsa_model *m, mhsa_dtype kv_dtype,
                                     mhsa_seq **out);
MHSA_API void mhsa_seq_destroy(mhsa_seq *s);  /* NULL: no-op */
/* Empties s: it then behaves bit for bit as a new sequence. */
MHSA_API void mhsa_seq_reset(mhsa_seq *s);    /* NULL: no-op */
/* Tokens evaluated so far (0 for NULL). */
MHSA_API int mhsa_seq_len(const mhsa_seq *s);

typedef enum mhsa_logits {
    MHSA_LOGITS_LAST = 0,  /* (n_vocab) of the last token */
    MHSA_LOGITS_ALL        /* (n, n_vocab) of every token, in order */
} mhsa_logits;

/* Appends tokens[0..n) to s (at positions mhsa_seq_len(s) ...) in one
 * forward and writes the logits asked for to logits[0..cap) floats.
 * Errors, with s unchanged: NULL s, tokens or logits, n = 0, a token
 * outside [0, n_vocab), an unknown `which`: MHSA_ERR_INVALID_ARG; cap
 * less than n_vocab (LAST) or n * n_vocab (ALL), or more tokens than s
 * has room for (mhsa_model_n_ctx - mhsa_seq_len): MHSA_ERR_SHAPE. (A
 * prompt evaluated in one call or in pieces may differ in the last bits:
 * with quantized weights pieces of two or more tokens give the same bits,
 * a piece of one token goes through the decoding kernel, docs/api.md.) */
MHSA_API mhsa_status mhsa_seq_eval(mhsa_seq *s, const int32_t *tokens,
                                   size_t n, mhsa_logits which,
                                   float *logits, size_t cap);

/* ---- Several sequences in one step -------------------------------------- */

/* One sequence's part of a batched step: what mhsa_seq_eval takes. */
typedef struct mhsa_batch_item {
    mhsa_seq *seq;            /* a sequence of the model; each at most once
                                 in a step */
    const int32_t *tokens;    /* tokens[0..n) appended to seq */
    size_t n;                 /* >= 1 */
    mhsa_logits which;        /* LAST or ALL, as mhsa_seq_eval */
    float *logits;            /* logits[0..cap) */
    size_t cap;
} mhsa_batch_item;

/* Advances every items[i].seq by its own tokens in one forward of the
 * model: the rows of all items go through each matrix together (the
 * weights are read once per step, not once per sequence), the attention
 * of each item reads its own sequence. This is how a server's step
 * advances all its requests at once (continuous batching).
 *
 * Batch invariance: each item's logits, and the state its sequence is left
 * in, are the same bits as mhsa_seq_eval(seq, tokens, n, which, logits,
 * cap) alone gives, whatever the other items of the step, their order,
 * and the thread count (docs/api.md, "Batch invariance").
 *
 * Errors, with every sequence unchanged: NULL m or items with n_items > 0,
 * a sequence NULL, of another model or twice in items, and each item's
 * errors of mhsa_seq_eval (naming the item): MHSA_ERR_INVALID_ARG or
 * MHSA_ERR_SHAPE. n_items = 0 does nothing. */
MHSA_API mhsa_status mhsa_batch_eval(mhsa_model *m,
                                     const mhsa_batch_item *items,
                                     size_t n_items);

/* ---- Chat --------------------------------------------------------------- */

typedef struct mhsa_chat_message {
    const char *role;      /* "system", "user" or "assistant" */
    const char *content;   /* NUL-terminated UTF-8 */
} mhsa_chat_message;

/* The chat format of m's tokenizer.chat_template, recognised by the
 * marks in it as llama.cpp's llama_chat_apply_template does: "chatml"
 * (SmolLM2, Qwen2), "llama3", "gemma" (Gemma 1-3), or Llama 2's:
 * "llama2" (no system block), "llama2-sys", "llama2-sys-bos" (<s> before
 * each later turn) and "llama2-sys-strip" (messages trimmed), llama.cpp's
 * names; NULL when m has no template or it is none of these (Mistral's
 * among them). */
MHSA_API const char *mhsa_model_chat_format(const mhsa_model *m);

/* The prompt of the conversation msgs[0..n) in chat format `format` (a
 * name above; NULL: the model's own, mhsa_model_chat_format), with the
 * assistant's turn opened at the end when add_assistant is 1: the text to
 * give mhsa_tokenize with MHSA_TOKENIZE_ADD_SPECIAL |
 * MHSA_TOKENIZE_PARSE_SPECIAL (the format writes no BOS; the tokenizer
 * adds it). The text is llama.cpp's for the same messages. buf, cap and
 * *len as mhsa_detokenize (NUL-terminated). Errors: NULL m or len, msgs
 * NULL with n > 0, a role or content NULL or a role other than the three
 * above, add_assistant not 0 or 1, buf NULL with cap > 0:
 * MHSA_ERR_INVALID_ARG; an unknown format name, or format NULL when the
 * model's template is not recognised (the message lists the names to
 * pass): MHSA_ERR_UNSUPPORTED; cap <= *len: MHSA_ERR_SHAPE. */
MHSA_API mhsa_status mhsa_chat_apply(const mhsa_model *m, const char *format,
                                     const mhsa_chat_message *msgs, size_t n,
                                     int add_assistant, char *buf, size_t cap,
                                     size_t *len);

/* ---- Sampling ----------------------------------------------------------- */

typedef struct mhsa_sampler mhsa_sampler;

/* Zero-initialise; a zero field is the default (greedy). The steps, in
 * order: repetition penalty on the logits, then with temperature > 0 the
 * top_k largest (higher logit first, lower id on ties), their softmax at
 * the temperature, the top-p nucleus, min-p, and one draw. */
typedef struct mhsa_sampler_params {
    float temperature;     /* 0: greedy (the first largest logit);
                              else finite, > 0 */
    int top_k;             /* 0: every token; else the k largest */
    float top_p;           /* 0 or 1: off; else in (0, 1): the fewest
                              best candidates whose probabilities reach
                              top_p */
    float min_p;           /* 0: off; else in (0, 1]: candidates whose
                              probability is at least min_p times the
                              best one's */
    float repeat_penalty;  /* 0 or 1: off; else > 0: a logit z of a token
                              in the recent history becomes z / penalty
                              when z > 0, z * penalty otherwise (CTRL, as
                              llama.cpp) */
    int repeat_last_n;     /* the history's last tokens penalised; 0: all
                              that is passed */
    uint64_t seed;         /* the random stream (splitmix64): the same
                              seed, logits and history give the same
                              tokens on every machine and thread count */
} mhsa_sampler_params;

/* A sampler over n_vocab logits; it allocates its scratch here. Errors:
 * MHSA_ERR_INVALID_ARG naming the field out of range (NULL params or out,
 * n_vocab < 1), MHSA_ERR_NO_MEMORY. */
MHSA_API mhsa_status mhsa_sampler_create(const mhsa_sampler_params *params,
                                         int n_vocab, mhsa_sampler **out);
MHSA_API void mhsa_sampler_destroy(mhsa_sampler *s);  /* NULL: no-op */
/* Back to the params' seed, as new. */
MHSA_API void mhsa_sampler_reset(mhsa_sampler *s);    /* NULL: no-op */

/* The next token from logits (n_vocab, the sampler's), penalising the
 * tokens of history[0..n_history) (NULL when n_history is 0; the
 * prompt and what was generated, typically). Greedy takes no random
 * draw; otherwise each call takes one. logits are not modified. Errors:
 * NULL s, logits or token, history NULL with n_history > 0, n_vocab not
 * the sampler's, a token of the penalised history outside [0, n_vocab):
 * MHSA_ERR_INVALID_ARG (the stream does not move). */
MHSA_API mhsa_status mhsa_sampler_sample(mhsa_sampler *s, const float *logits,
                                         size_t n_vocab,
                                         const int32_t *history,
                                         size_t n_history, int32_t *token);

#ifdef __cplusplus
}
#endif

#endif
