// shim.cc — the C interface of shim.h over Google Benchmark's C++ API.
#include "shim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

// The C side only ever holds a pointer; it is a benchmark::State underneath.
static benchmark::State &S(mhsa_bench_state *st)
{
    return *reinterpret_cast<benchmark::State *>(st);
}
static const benchmark::State &S(const mhsa_bench_state *st)
{
    return *reinterpret_cast<const benchmark::State *>(st);
}

extern "C" int mhsa_bench_add(const char *name, mhsa_bench_fn fn,
                              const void *ctx, int nargs,
                              const int64_t *args,
                              const char *const *arg_names)
{
    if (nargs < 0 || nargs > MHSA_BENCH_MAX_ARGS || (nargs > 0 && !args))
        return -1;
    auto *b = benchmark::RegisterBenchmark(
        name, [fn, ctx](benchmark::State &s) {
            fn(reinterpret_cast<mhsa_bench_state *>(&s), ctx);
        });
    if (nargs > 0) {
        b->Args(std::vector<int64_t>(args, args + nargs));
        if (arg_names)
            b->ArgNames(std::vector<std::string>(arg_names,
                                                 arg_names + nargs));
    }
    // OpenMP (or OpenBLAS) threads do the work: the benchmark thread's CPU
    // time would miss theirs, so time and rates are per wall-clock second.
    b->UseRealTime();
    b->Unit(benchmark::kMicrosecond);
    return 0;
}

// ---- headline rows and the summary table ----------------------------------

namespace {

struct Headline {
    std::string key;   // function name/arg:value/... as Google Benchmark
    std::string label, value, frac, ref, pivot, column;
    mhsa_bench_goal goal;
    double target;
    int64_t threads;   // the case's "threads" argument, 0 if none
};

std::vector<Headline> &headlines()
{
    static std::vector<Headline> h;
    return h;
}

struct Ratio {
    std::string label, num, den;
    double max;
};

std::vector<Ratio> &ratios()
{
    static std::vector<Ratio> r;
    return r;
}

// Medians (or the single run's values) and spread of one headline case.
struct Result {
    bool have = false, error = false;
    std::string error_message;
    double time_us = 0.0;                  // median wall time per iteration
    double cpu_us = 0.0;                   // median CPU time per iteration
    std::map<std::string, double> median, mean, stddev;
    int reps = 0;
};

class SummaryReporter : public benchmark::ConsoleReporter {
  public:
    std::map<std::string, Result> results;

    void ReportRuns(const std::vector<Run> &runs) override
    {
        for (const Run &r : runs) {
            std::string key = r.run_name.function_name;
            if (!r.run_name.args.empty())
                key += "/" + r.run_name.args;
            Result &res = results[key];
            if (r.error_occurred) {
                res.error = true;
                res.error_message = r.error_message;
                continue;
            }
            if (r.run_type == Run::RT_Iteration) {
                res.reps++;
                if (res.reps == 1) {   // replaced by the median if repeated
                    res.have = true;
                    res.time_us = r.GetAdjustedRealTime();
                    res.cpu_us = r.GetAdjustedCPUTime();
                    for (const auto &c : r.counters)
                        res.median[c.first] = c.second.value;
                }
                continue;
            }
            std::map<std::string, double> *into = nullptr;
            res.reps = static_cast<int>(r.repetitions);
            if (r.aggregate_name == "median") {
                into = &res.median;
                res.have = true;
                res.time_us = r.GetAdjustedRealTime();
                res.cpu_us = r.GetAdjustedCPUTime();
            } else if (r.aggregate_name == "mean") {
                into = &res.mean;
            } else if (r.aggregate_name == "stddev") {
                into = &res.stddev;
            }
            if (into)
                for (const auto &c : r.counters)
                    (*into)[c.first] = c.second.value;
        }
        ConsoleReporter::ReportRuns(runs);
    }
};

double get(const std::map<std::string, double> &m, const std::string &k)
{
    auto it = m.find(k);
    return it == m.end() ? NAN : it->second;
}

// The pivot table: rows sharing a pivot side by side, one group of
// columns (rate, fraction of limit, time over the first column's) per
// column name, in order of first appearance.
void print_pivot(const SummaryReporter &rep)
{
    std::vector<std::string> pivots, columns;
    std::map<std::pair<std::string, std::string>, const Headline *> cell;
    for (const Headline &h : headlines()) {
        if (h.pivot.empty() || !rep.results.count(h.key))
            continue;
        if (std::find(pivots.begin(), pivots.end(), h.pivot) == pivots.end())
            pivots.push_back(h.pivot);
        if (std::find(columns.begin(), columns.end(), h.column) ==
            columns.end())
            columns.push_back(h.column);
        cell[{h.pivot, h.column}] = &h;
    }
    if (pivots.empty())
        return;
    std::printf("\n%-50s", "side by side");
    for (const std::string &c : columns)
        std::printf(" | %-6s %8s %6s %6s", c.c_str(), "rate", "of_lim",
                    "time");
    std::printf("\n");
    for (const std::string &p : pivots) {
        std::printf("%-50s", p.c_str());
        double t0 = NAN;
        for (const std::string &c : columns) {
            auto it = cell.find({p, c});
            const Result *r = nullptr;
            if (it != cell.end()) {
                auto rr = rep.results.find(it->second->key);
                if (rr != rep.results.end() && rr->second.have)
                    r = &rr->second;
            }
            if (!r) {
                std::printf(" | %-6s %8s %6s %6s", "", "-", "-", "-");
                continue;
            }
            const Headline &h = *it->second;
            if (std::isnan(t0))
                t0 = r->time_us;
            std::printf(" | %-6s %8.2f %6.3f %5.2fx", "",
                        get(r->median, h.value),
                        h.frac.empty() ? NAN : get(r->median, h.frac),
                        r->time_us / t0);
        }
        std::printf("\n");
    }
    std::printf("rate in each row's own unit per second; time = median "
                "time over the first column's\n");
}

// The ratio rows: time of one row over another's, against a maximum. For
// two 1-thread rows also the ratio of their CPU times, which holds on a
// loaded machine (wall time then includes time the case was not running).
struct Times {
    double wall, cpu;
    int64_t threads;
};

void print_ratios(const std::map<std::string, Times> &time_of)
{
    if (ratios().empty())
        return;
    std::printf("\n%-60s %10s %10s %7s %7s %-8s %s\n", "time ratio",
                "num_us", "den_us", "ratio", "cpu", "target", "met");
    for (const Ratio &r : ratios()) {
        auto n = time_of.find(r.num), d = time_of.find(r.den);
        if (n == time_of.end() || d == time_of.end())
            continue;   // filtered out or failed
        double q = n->second.wall / d->second.wall;
        double qc = n->second.threads == 1 && d->second.threads == 1
                    ? n->second.cpu / d->second.cpu : NAN;
        char target[16] = "", met[8] = "";
        if (r.max > 0.0) {
            std::snprintf(target, sizeof target, "<= %.2f", r.max);
            std::snprintf(met, sizeof met, "%s", q <= r.max ? "yes" : "NO");
        }
        std::printf("%-60s %10.1f %10.1f %7.3f %7.3f %-8s %s\n",
                    r.label.c_str(), n->second.wall, d->second.wall, q, qc,
                    target, met);
    }
    std::printf("ratio = median wall time over median wall time (met is "
                "judged on it); cpu = the same of CPU time, 1-thread rows "
                "only\n");
}

void print_summary(const SummaryReporter &rep)
{
    std::map<std::string, double> value_of;   // label -> median value
    std::map<std::string, Times> time_of;     // label -> median times
    for (const Headline &h : headlines()) {
        auto it = rep.results.find(h.key);
        if (it != rep.results.end() && it->second.have && !h.value.empty())
            value_of[h.label] = get(it->second.median, h.value);
        if (it != rep.results.end() && it->second.have)
            time_of[h.label] = Times{it->second.time_us, it->second.cpu_us,
                                     h.threads};
    }
    std::printf("\n%-58s %10s %-8s %9s %7s %7s %6s %-20s %s\n", "figure",
                "median", "unit", "time_us", "of_lim", "cpu_lim", "cv%",
                "target", "met");
    for (const Headline &h : headlines()) {
        auto it = rep.results.find(h.key);
        if (it == rep.results.end())
            continue;   // filtered out
        const Result &r = it->second;
        if (!r.have) {
            std::printf("%-58s %s\n", h.label.c_str(),
                        r.error ? r.error_message.c_str() : "no result");
            continue;
        }
        double v = h.value.empty() ? NAN : get(r.median, h.value);
        double f = h.frac.empty() ? NAN : get(r.median, h.frac);
        double cv = h.value.empty() ? NAN
                    : 100.0 * get(r.stddev, h.value) / get(r.mean, h.value);
        char target[48] = "", met[8] = "";
        bool ok = true;
        switch (h.goal) {
        case MHSA_GOAL_NONE:
            break;
        case MHSA_GOAL_FRAC_MIN:
            std::snprintf(target, sizeof target, ">= %.2f", h.target);
            ok = f >= h.target;
            break;
        case MHSA_GOAL_US_MAX:
            std::snprintf(target, sizeof target, "<= %.0f us", h.target);
            ok = r.time_us <= h.target;
            break;
        case MHSA_GOAL_SPEEDUP_MIN: {
            double base = value_of.count(h.ref) ? value_of[h.ref] : NAN;
            f = v / base;   // shown as the fraction column: the speedup
            double lim = get(r.median, "lim_speedup");
            if (std::isnan(lim))
                std::snprintf(target, sizeof target, ">= %.2fx", h.target);
            else   // what the limit itself scales by
                std::snprintf(target, sizeof target, ">= %.2fx (lim %.2fx)",
                              h.target, lim);
            ok = f >= h.target;
            break;
        }
        }
        if (h.goal != MHSA_GOAL_NONE)
            std::snprintf(met, sizeof met, "%s", ok ? "yes" : "NO");
        std::string unit = h.value.empty() ? "" : h.value + "/s";
        // One thread on a shared machine: the same fraction per second of
        // CPU time the case got (wall time includes time it was not
        // running). Not for more threads, whose CPU time adds up.
        double fc = h.threads == 1 && h.goal != MHSA_GOAL_SPEEDUP_MIN &&
                    !h.frac.empty() && r.cpu_us > 0.0
                    ? f * r.time_us / r.cpu_us : NAN;
        std::printf("%-58s %10.2f %-8s %9.1f %7.3f %7.3f %6.1f %-20s %s\n",
                    h.label.c_str(), v, unit.c_str(), r.time_us, f, fc, cv,
                    target, met);
    }
    std::printf("median of %d repetitions; of_lim = median of the case's "
                "fraction-of-limit counter (speedup for scaling rows); "
                "cpu_lim = of_lim x wall/CPU time (1-thread rows: the "
                "fraction while running, for a loaded machine); cv = "
                "stddev/mean of the rate over the repetitions\n",
                rep.results.empty() ? 0 : rep.results.begin()->second.reps);
    print_pivot(rep);
    print_ratios(time_of);
}

std::string regex_escape(const std::string &s)
{
    std::string o;
    for (char c : s) {
        if (std::strchr(".^$|()[]{}*+?\\", c))
            o += '\\';
        o += c;
    }
    return o;
}

bool has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0)
            return true;
    return false;
}

}  // namespace

extern "C" int mhsa_bench_add_headline(const mhsa_bench_headline *h,
                                       const char *name, mhsa_bench_fn fn,
                                       const void *ctx, int nargs,
                                       const int64_t *args,
                                       const char *const *arg_names)
{
    if (!h || !h->label)
        return -1;
    int rc = mhsa_bench_add(name, fn, ctx, nargs, args, arg_names);
    if (rc != 0)
        return rc;
    Headline hl;
    hl.key = name;
    for (int i = 0; i < nargs; i++) {
        hl.key += "/";
        if (arg_names)
            hl.key += std::string(arg_names[i]) + ":";
        hl.key += std::to_string(args[i]);
    }
    hl.label = h->label;
    hl.value = h->value ? h->value : "";
    hl.frac = h->frac ? h->frac : "";
    hl.ref = h->ref ? h->ref : "";
    hl.pivot = h->pivot ? h->pivot : "";
    hl.column = h->column ? h->column : "";
    hl.goal = h->goal;
    hl.target = h->target;
    hl.threads = 0;
    for (int i = 0; i < nargs && arg_names; i++)
        if (std::strcmp(arg_names[i], "threads") == 0)
            hl.threads = args[i];
    headlines().push_back(hl);
    return 0;
}

extern "C" int mhsa_bench_add_ratio(const char *label, const char *num,
                                    const char *den, double max)
{
    if (!label || !num || !den)
        return -1;
    ratios().push_back(Ratio{label, num, den, max});
    return 0;
}

int mhsa_bench_main(int argc, char **argv)
{
    // --headlines: only the headline cases (unless a filter is given),
    // each repeated (5 unless given), then one table of their medians.
    bool summary = false;
    std::vector<char *> args;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && std::strcmp(argv[i], "--headlines") == 0)
            summary = true;
        else
            args.push_back(argv[i]);
    }
    std::vector<std::string> extra;
    if (summary) {
        int n = static_cast<int>(args.size());
        if (!has_flag(n, args.data(), "--benchmark_filter")) {
            std::string re = "^(";
            for (size_t i = 0; i < headlines().size(); i++)
                re += (i ? "|" : "") + regex_escape(headlines()[i].key);
            extra.push_back("--benchmark_filter=" + re + ")/real_time$");
        }
        if (!has_flag(n, args.data(), "--benchmark_repetitions"))
            extra.push_back("--benchmark_repetitions=5");
        if (!has_flag(n, args.data(), "--benchmark_min_time"))
            extra.push_back("--benchmark_min_time=0.2");
        if (!has_flag(n, args.data(), "--benchmark_report_aggregates_only"))
            extra.push_back("--benchmark_report_aggregates_only=true");
    }
    for (std::string &e : extra)
        args.push_back(&e[0]);
    int n = static_cast<int>(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&n, args.data());
    if (benchmark::ReportUnrecognizedArguments(n, args.data()))
        return 1;
    if (summary) {
        SummaryReporter rep;
        benchmark::RunSpecifiedBenchmarks(&rep);
        print_summary(rep);
    } else {   // keeps --benchmark_format and --benchmark_out as they are
        benchmark::RunSpecifiedBenchmarks();
    }
    benchmark::Shutdown();
    return 0;
}

extern "C" int64_t mhsa_bench_arg(const mhsa_bench_state *st, int i)
{
    return S(st).range(static_cast<size_t>(i));
}

extern "C" int mhsa_bench_keep_running(mhsa_bench_state *st)
{
    return S(st).KeepRunning();
}

extern "C" int mhsa_bench_keep_running_batch(mhsa_bench_state *st, int64_t n)
{
    return S(st).KeepRunningBatch(n);
}

extern "C" int64_t mhsa_bench_iterations(const mhsa_bench_state *st)
{
    return S(st).iterations();
}

extern "C" void mhsa_bench_skip(mhsa_bench_state *st, const char *msg)
{
    S(st).SkipWithError(msg);
}

extern "C" void mhsa_bench_pause(mhsa_bench_state *st) { S(st).PauseTiming(); }
extern "C" void mhsa_bench_resume(mhsa_bench_state *st)
{
    S(st).ResumeTiming();
}

extern "C" void mhsa_bench_set_items(mhsa_bench_state *st, int64_t items)
{
    S(st).SetItemsProcessed(items);
}

extern "C" void mhsa_bench_set_bytes(mhsa_bench_state *st, int64_t bytes)
{
    S(st).SetBytesProcessed(bytes);
}

extern "C" void mhsa_bench_counter(mhsa_bench_state *st, const char *name,
                                   double v)
{
    S(st).counters[name] = benchmark::Counter(v);
}

extern "C" void mhsa_bench_rate(mhsa_bench_state *st, const char *name,
                                double per_iter)
{
    // Iteration-invariant rate: Google Benchmark multiplies by the
    // iteration count and divides by the (wall-clock) time.
    S(st).counters[name] = benchmark::Counter(
        per_iter, benchmark::Counter::kIsIterationInvariantRate);
}

extern "C" void mhsa_bench_use(const void *p)
{
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
}
