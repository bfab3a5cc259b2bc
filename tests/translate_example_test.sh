#!/usr/bin/env bash
# examples/translate end to end on the English-Spanish Bible: a short run on
# a 2x2 mesh into a checkpoint directory (test BLEU greedy and by beam
# search), a resumption, packed rows, --translate from the checkpoint, and a
# resumption with another vocabulary refused by name.
# usage: translate_example_test.sh PATH_TO_TRANSLATE WORK_DIR
set -euo pipefail
translate=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
tiny=(--d_model 32 --d_ff 64 --heads 2 --d_kv 16 --encoder_layers 1 --decoder_layers 1
      --batch 8 --input_length 48 --target_length 48 --vocab_dir "$work/vocab"
      --eval_every 2 --eval_sentences 4 --test_sentences 8)
out=$("$translate" "${tiny[@]}" --vocab_size 1000 --steps 4 --checkpoint_dir "$work/ckpt" \
      --mesh_shape "rows:2;cols:2" --layout "batch:rows;heads:cols;vocab:cols;d_ff:cols")
echo "$out"
grep -q "data: 310[0-9][0-9] pairs from bible" <<<"$out"
grep -q "step 4 loss [0-9.]* dev loss [0-9.]* dev BLEU [0-9.]* (4 sentences)" <<<"$out"
grep -q "^test, greedy: BLEU = [0-9.]* " <<<"$out"
grep -q "^test, 4 beams: BLEU = [0-9.]* " <<<"$out"
grep -q "^source-copy baseline BLEU = " <<<"$out"
test -f "$work/ckpt/vocabulary.model"
# Resumes from the checkpoint (the decoder's caches are neither saved nor
# needed to resume).
resumed=$("$translate" "${tiny[@]}" --vocab_size 1000 --steps 6 --checkpoint_dir "$work/ckpt" \
          --mesh_shape "rows:2;cols:2" --layout "batch:rows;heads:cols;vocab:cols;d_ff:cols")
grep -q "resumed from .*ckpt-4.h5 at step 4" <<<"$resumed"
grep -q "step 6 loss" <<<"$resumed"
# --eval: a saved checkpoint's test BLEU, the latest or a given step's.
evaluated=$("$translate" "${tiny[@]}" --vocab_size 1000 --checkpoint_dir "$work/ckpt" --eval true \
            --eval_step 4 --beams 2 --hypotheses "$work/hyps.txt")
grep -q "evaluating .*ckpt-4.h5" <<<"$evaluated"
grep -q "^test, 2 beams: BLEU = " <<<"$evaluated"
test "$(wc -l < "$work/hyps.txt")" -eq 8
if "$translate" "${tiny[@]}" --vocab_size 1000 --checkpoint_dir "$work/ckpt" --eval true \
     --eval_step 5 2>/dev/null; then echo "FAIL: evaluated a missing step"; exit 1; fi
packed=$("$translate" "${tiny[@]}" --vocab_size 1000 --steps 2 --packed true)
grep -q "step 2 loss" <<<"$packed"
said=$("$translate" "${tiny[@]}" --vocab_size 1000 --checkpoint_dir "$work/ckpt" \
       --translate "In the beginning God created the heavens and the earth.")
echo "translation: $said"
test -n "$said"
if refused=$("$translate" "${tiny[@]}" --vocab_size 900 --steps 8 --checkpoint_dir "$work/ckpt" 2>&1); then
  echo "FAIL: resumed with another vocabulary"; exit 1
fi
grep -q "was trained with vocabulary spm1000-.*not this one (spm900-" <<<"$refused" ||
  { echo "FAIL: unclear refusal: $refused"; exit 1; }
# The refused run left the directory's vocabulary as it was.
again=$("$translate" "${tiny[@]}" --vocab_size 1000 --checkpoint_dir "$work/ckpt" \
        --translate "In the beginning God created the heavens and the earth.")
test "$again" = "$said" || { echo "FAIL: the refused run changed the translation"; exit 1; }
# Gradient accumulation: 2 parts of the batch on a 2-way batch split train
# as the whole batch (to float rounding; no dropout, so that the parts draw
# no other masks), and a checkpoint resumes with another part count.
exact=(--dropout 0 --loss_digits 9 --packed false --eval_sentences 0 --steps 3 --eval_every 3)
losses() { sed -n 's/^step 3 loss \([0-9.]*\) dev loss \([0-9.]*\).*/\1 \2/p'; }
whole=$("$translate" "${tiny[@]}" --vocab_size 1000 "${exact[@]}" | losses)
parts=$("$translate" "${tiny[@]}" --vocab_size 1000 "${exact[@]}" --microbatches 2 \
        --mesh_shape "rows:2" --layout "batch:rows" --checkpoint_dir "$work/acc" | losses)
echo "whole batch: $whole; 2 parts: $parts"
awk -v a="$whole" -v b="$parts" 'BEGIN { split(a, x); split(b, y);
  for (i = 1; i <= 2; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (x[i] == "" || d > 1e-5 * x[i]) exit 1 } }' ||
  { echo "FAIL: 2 parts ($parts) did not train as the whole batch ($whole)"; exit 1; }
resumed=$("$translate" "${tiny[@]}" --vocab_size 1000 "${exact[@]}" --steps 4 --microbatches 4 \
          --checkpoint_dir "$work/acc")
grep -q "resumed from .*ckpt-3.h5 at step 3" <<<"$resumed"
grep -q "step 4 loss" <<<"$resumed"
if bad=$("$translate" "${tiny[@]}" --vocab_size 1000 --microbatches 8 --mesh_shape "rows:2" \
         --layout "batch:rows" 2>&1); then echo "FAIL: 1 row per part on 2 processors"; exit 1; fi
grep -q "leaves 1 rows per part" <<<"$bad" || { echo "FAIL: unclear refusal: $bad"; exit 1; }
rm -rf "$work"
echo "PASS: translate trains, evaluates, checkpoints, translates, accumulates and refuses another vocabulary"
