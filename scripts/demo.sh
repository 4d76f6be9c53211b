#!/usr/bin/env bash
# Demo: install dependencies, build chorus and its Python package (Release, build/), then compile
# GC3's hierarchical AllReduce for 2 nodes x 3 GPUs, verify it, print its IR and draw it, write
# a ring AllReduce in Python and run it, and train a small model with PyTorch DDP on 2 ranks over
# chorus's collectives.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh
# The same configuration as test.sh's first stage, so the two scripts share build/ as is.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHORUS_WERROR=ON -DCHORUS_PYTHON=ON
cmake --build build --target chorus chorus_python

chorus=build/chorus
shape=(--nodes 2 --gpus-per-node 3)

echo
echo "== chorus compile allreduce.hierarchical ${shape[*]} --format xml | chorus verify -"
"$chorus" compile allreduce.hierarchical "${shape[@]}" --format xml | "$chorus" verify -

echo
echo "== chorus compile allreduce.hierarchical ${shape[*]} --format text"
"$chorus" compile allreduce.hierarchical "${shape[@]}" --format text

mkdir -p build/demo
dot_file=build/demo/allreduce_hierarchical_2x3.dot
"$chorus" compile allreduce.hierarchical "${shape[@]}" --format dot -o "$dot_file"
echo
echo "DOT picture written to $(cd "$(dirname "$dot_file")" && pwd)/$(basename "$dot_file")"
echo "(with Graphviz installed, render it: dot -Tsvg $dot_file -o allreduce_hierarchical_2x3.svg)"

echo
echo "== The DSL in Python: PYTHONPATH=build/python /opt/chorus/venv/bin/python examples/python/ring_allreduce.py"
echo "   (docs/python.md)"
PYTHONPATH=build/python "${CHORUS_VENV:-/opt/chorus/venv}/bin/python" examples/python/ring_allreduce.py

echo
echo "== PyTorch on chorus: /opt/chorus/venv/bin/torchrun --nproc_per_node 2 examples/torch/ddp_train.py --backend chorus"
echo "   (the README's command; docs/torch.md)"
PYTHONPATH=build/python "${CHORUS_VENV:-/opt/chorus/venv}/bin/torchrun" --standalone --nproc_per_node 2 \
  examples/torch/ddp_train.py --backend chorus --epochs 3
