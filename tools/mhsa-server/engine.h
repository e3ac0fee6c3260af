// engine.h — continuous batching: one engine thread owns the model's
// evaluation and --parallel sequences (slots). Connection threads submit
// requests (prompt already tokenized, sampler already made) into a
// bounded queue and take the text the engine produces; each engine step
// admits queued requests into free slots (a prompt whole, as one item:
// the same shape it has alone, so the same bits), advances every active
// slot in one mhsa_batch_eval, samples, detokenizes and checks the stops.
//
// Threads: sched_submit, sched_take, sched_cancel and sched_release may be
// called from any thread; one mutex guards the queue and every request's
// shared fields, and each request has a condition variable its
// connection waits on.
#ifndef MHSA_SERVER_ENGINE_H
#define MHSA_SERVER_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "mhsa_model.h"
#include "openai.h"

typedef struct sched sched;
typedef struct srv_req srv_req;

typedef struct sched_config {
    int parallel;      // slots, >= 1
    int queue;         // requests waiting for a slot, >= 1
    int threads;       // OpenMP threads of the engine; 0: OpenMP's own
    mhsa_dtype kv;     // the slots' KV cache type
} sched_config;

// Creates the slots (one mhsa_seq each, of mhsa_model_n_ctx(m)
// positions) and starts the engine thread. 0, or -1 with a message in
// err.
int sched_create(mhsa_model *m, const sched_config *c, sched **out,
                 char *err, size_t errcap);
// Cancels every queued and active request (they end with an error:
// "the server is shutting down"), stops and joins the engine. Requests
// still referenced by connections stay valid until sched_release.
void sched_shutdown(sched *s);
// Frees the slots; after sched_shutdown and after every request is
// released.
void sched_destroy(sched *s);

// A new request: prompt[0..n) (copied; 1 <= n < the context), sampler
// (taken over: the request frees it), max_tokens >= 0, stops (copied).
// Returns NULL on no memory. The caller holds one reference.
srv_req *sched_req_new(const int32_t *prompt, size_t n, mhsa_sampler *smp,
                       long max_tokens, char *const *stops, size_t n_stops);
// Queues r. 0; -1 when the queue is full; -2 when shutting down (the
// request is not queued then, and the caller still releases it).
int sched_submit(sched *s, srv_req *r);

// What sched_take gives.
typedef struct sched_out {
    char *text;           // new valid UTF-8 (malloc'd, may be NULL: none)
    size_t len;
    int done;             // 1: the request has ended (text is its last)
    const char *finish;   // when done: "stop" or "length", or NULL on error
    const char *error;    // when done with an error: its message
    long prompt_tokens, completion_tokens;
} sched_out;

// Waits up to timeout_ms for text or the end of r and takes what there
// is (text may be empty when the time ran out).
void sched_take(sched *s, srv_req *r, int timeout_ms, sched_out *o);
// The client is gone: a queued r leaves the queue at once (it ends with
// the error "cancelled"), a running one frees its slot at the engine's
// next step. No-op when r has ended.
void sched_cancel(sched *s, srv_req *r);
// Drops the caller's reference (the engine holds its own while r runs).
void sched_release(sched *s, srv_req *r);

// Counts for /health.
void sched_counts(sched *s, int *busy, int *idle, int *queued);

#endif
