#!/usr/bin/env python3
"""mtf-bleu against references: its 13a tokens against a regular-expression
rendering of mteval-v13a's rules (as sacrebleu writes them), and its corpus
BLEU against NLTK's corpus_bleu on those tokens (Debian python3-nltk).

usage: bleu_vs_nltk.py PATH_TO_MTF_BLEU
"""
import random
import re
import subprocess
import sys
import tempfile
import warnings

try:
    from nltk.translate.bleu_score import corpus_bleu
except ImportError:
    print("NLTK is not installed here (apt-get install python3-nltk): skipped", file=sys.stderr)
    sys.exit(77)
warnings.filterwarnings("ignore", module="nltk")  # its note on corpora scoring 0

RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(line):
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for a, b in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
            line = line.replace(a, b)
    line = f" {line} "
    for pattern, repl in RULES:
        line = pattern.sub(repl, line)
    return line.split()


WORDS = ("the a of and to in he that shall his they unto I for is him was with not my it all "
         "Dios señor año niño corazón él sí también dijo Jehová: tierra; (verdad) «así» "
         "e.g. U.S.A. 3.50 1,000 12-14 4.5% $20 don't it's -- ... ?! & &amp; &quot;x&quot; "
         "a/b x+y [note] {z} ~ ^ _ ` @ # | \\ = < >").split()


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def perturb(rng, s):
    words = s.split()
    for _ in range(rng.randint(0, max(1, len(words) // 3))):
        op = rng.random()
        i = rng.randrange(len(words)) if words else 0
        if op < 0.3 and words:
            del words[i]
        elif op < 0.6:
            words.insert(i, rng.choice(WORDS))
        elif words:
            words[i] = rng.choice(WORDS)
    sep = rng.choice([" ", "  ", "\u00a0", " \t"])
    return sep.join(words)


def check(mtf_bleu, hyps, refs, what):
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt") as h, \
            tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt") as r:
        h.write("\n".join(hyps) + "\n")
        r.write("\n".join(refs) + "\n")
        h.flush()
        r.flush()
        out = subprocess.run([mtf_bleu, "--hypotheses", h.name, "--references", r.name,
                              "--tokens", "true"], check=True, capture_output=True,
                             encoding="utf-8").stdout.splitlines()
    token_lines, score_line = out[:-2], out[-2]
    assert len(token_lines) == len(hyps), (what, len(token_lines), len(hyps))
    hyp_tokens, ref_tokens = [], []
    for i, line in enumerate(token_lines):
        got_h, got_r = line.split("\t")
        want_h, want_r = tokenize_13a(hyps[i]), tokenize_13a(refs[i])
        assert got_h.split(" ") == want_h or (got_h == "" and want_h == []), \
            (what, i, hyps[i], got_h, want_h)
        assert got_r.split(" ") == want_r or (got_r == "" and want_r == []), \
            (what, i, refs[i], got_r, want_r)
        hyp_tokens.append(want_h)
        ref_tokens.append([want_r])
    ours = float(score_line.split()[1])
    theirs = float(corpus_bleu(ref_tokens, hyp_tokens))
    if theirs < 1e-60:  # NLTK's method0 gives 1e-77-ish where an order has no match
        theirs = 0.0
    assert abs(ours - theirs) <= 1e-12 + 1e-9 * theirs, (what, ours, theirs)
    return ours


def main():
    mtf_bleu = sys.argv[1]
    rng = random.Random(2018)
    scores = []
    for case in range(40):
        n = rng.choice([1, 3, 10, 60])
        refs = [sentence(rng, rng.randint(1, 30)) for _ in range(n)]
        hyps = [perturb(rng, r) for r in refs]
        if case % 10 == 0:  # some hypotheses shorter than 4 tokens, and empty ones
            hyps = [" ".join(h.split()[: rng.randint(0, 3)]) for h in hyps]
        scores.append(check(mtf_bleu, hyps, refs, f"case {case}"))
    # The same text on both sides scores 100.
    same = [sentence(rng, 12) for _ in range(5)]
    assert check(mtf_bleu, same, same, "identical") == 1.0
    nonzero = sum(1 for s in scores if s > 0)
    assert nonzero >= 20, f"only {nonzero} of 40 corpora scored above 0: the check is too weak"
    print(f"mtf-bleu agrees with NLTK's corpus_bleu on 41 corpora ({nonzero} with BLEU > 0) "
          f"and with the 13a rules on every line")


if __name__ == "__main__":
    main()
