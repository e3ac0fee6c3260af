# shellcheck shell=bash
# peak-rss.sh — sourced by test-model.sh and test-gemma.sh: the memory
# check both run on their real model.
#
# check_peak_rss NAME BUILD MODEL: the peak RSS of a greedy 64-token
# generation by BUILD/mhsa-generate on MODEL, printed under NAME, and a
# failure when it is over the file's size + 64 MiB.
check_peak_rss() {
    local name=$1 build=$2 model=$3 size rss limit
    size=$(stat -c %s "$model")
    rss=$(python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)' \
          "$build/mhsa-generate" --model "$model" --temperature 0 -n 64 \
          --threads 2 --prompt "Once upon a time, in a small village,")
    limit=$((size + 64 * 1024 * 1024))
    echo "$name: peak RSS of a 64-token generation $((rss / 1000000)) MB," \
         "file $((size / 1000000)) MB (limit: file + 64 MiB)"
    if ((rss > limit)); then
        echo "$name: peak RSS $rss bytes is over the file + 64 MiB" \
             "($limit)" >&2
        return 1
    fi
}
