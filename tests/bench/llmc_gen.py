#!/usr/bin/env python3
"""Write a random-init GPT-2 checkpoint and token shards in llm.c's formats.

  llmc_gen.py ckpt OUT --layers L --hidden C --heads NH --vocab V
              --padded-vocab Vp --max-seq MAXT [--seed S] [--bf16]
  llmc_gen.py shard OUT TEXTFILE [--start FRACTION] [--end FRACTION]

Checkpoint: 256 int32 header (20240326, 3 or 5, maxT, V, L, NH, C, Vp),
then wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b,
fcw, fcb, fcprojw, fcprojb, lnfw, lnfb. Every tensor is random (biases and
LayerNorms too, and wte's padding rows), so a tensor read from the wrong
place changes the numbers. Shard: 256 int32 header (20240520, 1, count),
then the bytes of TEXTFILE[start:end] as uint16 tokens.
Standard library only (no numpy)."""
import argparse
import random
import struct
import sys


def bf16(x):
    u = struct.unpack('<I', struct.pack('<f', x))[0]
    u = (u + 0x7fff + ((u >> 16) & 1)) >> 16
    return u & 0xffff


def ckpt(a):
    rnd = random.Random(a.seed)
    C, L, V, Vp, T = a.hidden, a.layers, a.vocab, a.padded_vocab, a.max_seq
    shapes = [
        ('wte', Vp * C, 0.02, 0), ('wpe', T * C, 0.01, 0),
        ('ln1w', L * C, 0.1, 1), ('ln1b', L * C, 0.02, 0),
        ('qkvw', L * 3 * C * C, 0.02, 0), ('qkvb', L * 3 * C, 0.02, 0),
        ('attprojw', L * C * C, 0.02 / (2 * L) ** 0.5, 0),
        ('attprojb', L * C, 0.02, 0),
        ('ln2w', L * C, 0.1, 1), ('ln2b', L * C, 0.02, 0),
        ('fcw', L * 4 * C * C, 0.02, 0), ('fcb', L * 4 * C, 0.02, 0),
        ('fcprojw', L * C * 4 * C, 0.02 / (2 * L) ** 0.5, 0),
        ('fcprojb', L * C, 0.02, 0),
        ('lnfw', C, 0.1, 1), ('lnfb', C, 0.02, 0)]
    header = [20240326, 5 if a.bf16 else 3, T, V, L, a.heads, C, Vp]
    header += [0] * (256 - len(header))
    with open(a.out, 'wb') as f:
        f.write(struct.pack('<256i', *header))
        for _, n, std, mean in shapes:
            vals = [mean + rnd.gauss(0.0, std) for _ in range(n)]
            if a.bf16:
                f.write(struct.pack('<%dH' % n, *[bf16(v) for v in vals]))
            else:
                f.write(struct.pack('<%df' % n, *vals))


def shard(a):
    data = open(a.text, 'rb').read()
    lo, hi = int(len(data) * a.start), int(len(data) * a.end)
    toks = data[lo:hi]
    with open(a.out, 'wb') as f:
        f.write(struct.pack('<256i', 20240520, 1, len(toks), *([0] * 253)))
        f.write(struct.pack('<%dH' % len(toks), *toks))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest='cmd', required=True)
    c = sub.add_parser('ckpt')
    c.add_argument('out')
    for k in ('layers', 'hidden', 'heads', 'vocab', 'padded_vocab', 'max_seq'):
        c.add_argument('--' + k.replace('_', '-'), type=int, required=True)
    c.add_argument('--seed', type=int, default=1)
    c.add_argument('--bf16', action='store_true')
    s = sub.add_parser('shard')
    s.add_argument('out')
    s.add_argument('text')
    s.add_argument('--start', type=float, default=0.0)
    s.add_argument('--end', type=float, default=1.0)
    a = p.parse_args()
    ckpt(a) if a.cmd == 'ckpt' else shard(a)
    return 0


if __name__ == '__main__':
    sys.exit(main())
