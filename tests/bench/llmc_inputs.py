#!/usr/bin/env python3
"""Write the inputs llm.c's train_gpt2.c reads, for the benchmark model
(8 layers, hidden 128, 4 heads, vocab 256, max_seq_len 64), into DIR:

  DIR/gpt2_124M.bin  a random-init checkpoint in llm.c's format: 256 int32
                     header (magic 20240326, version 3, maxT, V, L, NH, C,
                     padded V), then the fp32 parameters in llm.c's order
  DIR/dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin
                     token shards (magic 20240520, version 1, count, then
                     uint16 tokens): the bytes of CORPUS, one token each

usage: llmc_inputs.py DIR CORPUS
Deterministic (fixed seed); nothing is downloaded.
"""
import array, os, random, struct, sys

def shard(path, tokens):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    head = [0] * 256
    head[0], head[1], head[2] = 20240520, 1, len(tokens)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *head))
        f.write(array.array("H", tokens).tobytes())

def checkpoint(path, L=8, C=128, NH=4, V=256, T=64):
    head = [0] * 256
    head[:8] = [20240326, 3, T, V, L, NH, C, V]
    sizes = [V * C, T * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C,
             L * C, L * C, L * C, L * 4 * C * C, L * 4 * C, L * C * 4 * C,
             L * C, C, C]
    ones = {2, 8, 14}   # LayerNorm weights start at 1, biases at 0
    zeros = {3, 5, 7, 9, 11, 13, 15}
    rng = random.Random(1234)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *head))
        for i, n in enumerate(sizes):
            if i in ones:
                vals = [1.0] * n
            elif i in zeros:
                vals = [0.0] * n
            else:
                vals = [rng.gauss(0.0, 0.02) for _ in range(n)]
            f.write(array.array("f", vals).tobytes())

def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, corpus = sys.argv[1], sys.argv[2]
    data = open(corpus, "rb").read()
    cut = len(data) * 9 // 10
    base = os.path.join(out, "dev/data/tinyshakespeare/tiny_shakespeare_")
    shard(base + "train.bin", list(data[:cut]))
    shard(base + "val.bin", list(data[cut:]))
    checkpoint(os.path.join(out, "gpt2_124M.bin"))

if __name__ == "__main__":
    main()
