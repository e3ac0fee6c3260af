# shellcheck shell=bash
# llama_cpp.sh — sourced by make_greedy_ids.sh and check_quant_types.sh:
# the two things both do with a llama.cpp checkout (built with cmake,
# outside this repository). Run from the repository's top.

# build_greedy_ids LLAMA_CPP OUT: greedy_ids.c against its libllama.
build_greedy_ids() {
    gcc -O2 tools/llama-ref/greedy_ids.c -I"$1/include" \
        -I"$1/ggml/include" -L"$1/build/bin" -lllama \
        -Wl,-rpath,"$1/build/bin" -o "$2"
}

# as_f32 LLAMA_CPP IN.gguf OUT.gguf: IN's weights dequantized to F32 by
# llama-quantize (make_greedy_ids.sh says why the reference runs on F32).
as_f32() {
    "$1/build/bin/llama-quantize" --allow-requantize "$2" "$3" F32 \
        >/dev/null 2>&1
}
