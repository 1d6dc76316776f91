#!/bin/sh
# tp_vocab_pad.sh — a vocabulary SHARDFLOW_TP does not divide, vocabulary-parallel
# (issue 48 item 1): each TP rank holds ceil(V / K) rows of the embedding and columns
# of the tied head's logits, the last ranks' rows past V padding (zero, internal), and
# the padding never counts. Against 1 rank (tests/tp_vocab.sh's bounds).
#
# Models (tests/test_models.h): nanogpt-vpt15, the tied nanogpt-vpt of vocabulary 15
# (blocks split too: tp 2 only, its 2 heads), slices of 8 and 7 + 1 of padding;
# nanogpt-vpo9, the tied nanogpt of vocabulary 9 vocabulary-parallel only (blocks
# whole): at tp 2 slices of 5 and 4 + 1, at tp 4 of 3, 3, 3 and 3 of padding alone.
# Checked:
#  - tp 2 on 2 ranks, dp 2 x tp 2 and tp 4 on 4 ranks = 1 rank, SGD and AdamW: every
#    step's loss (the padding logits, 0 from the zero rows, never in the row max, the
#    sum of exponentials or the target: counted, the loss moves by log(1 + e^-M) a row)
#    and every parameter, the same count (the dumps hold the whole model: V rows);
#  - sf_model_param_count / sf_model_stats' model bytes = 1 rank's (no padding), the
#    TP slice's bytes hold the padding (the memory a rank keeps);
#  - the safetensors export at tp 2 = 1 rank's header (names, shapes (15, 10), offsets),
#    bitwise;
#  - clipping's norm at 2 x 2 = 1 rank's;
#  - ignored labels and sf_model_evaluate's vocabulary-parallel path at 2 x 2 = 1 rank;
#  - a checkpoint 2 x 2 -> 4 x 1 -> 1 x 1 = 1 rank uninterrupted (the file holds V rows);
#  - examples/gpt with a vocabulary of 257 (the tied head: SHARDFLOW_VOCAB_PARALLEL auto
#    takes it vocabulary-parallel, 129 classes a rank) at tp 2 = tp 1: every step's loss,
#    the validation loss and the sampled text (sf_model_predict's logits made whole
#    from the ranks' classes, the padding left out).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ckpt_lib.sh"
GPT="$top_builddir/examples/gpt"
require_progs "$TRAIN_DUMP" "$DUMP_COMPARE" "$GPT"

plan 19

# layouts against 1 rank, within its rounding interval (tests/tp.sh)
for c in nanogpt-vpt15:sgd:2 nanogpt-vpt15:adamw:2 nanogpt-vpo9:sgd:4 nanogpt-vpo9:adamw:4; do
	model=${c%%:*} rest=${c#*:}
	opt=${rest%:*} k=${rest#*:}
	train_interval 1 "r1-$model-$opt" --model "$model" --optimizer "$opt" --steps 6 --weight-decay 0.1
	train 2 "t2-$model-$opt" SHARDFLOW_TP=2 --model "$model" --optimizer "$opt" --steps 6 \
		--weight-decay 0.1
	compare_within "$model, $opt: tp 2 on 2 ranks = 1 rank" "t2-$model-$opt" "r1-$model-$opt"
	train 4 "t4-$model-$opt" SHARDFLOW_TP="$k" --model "$model" --optimizer "$opt" --steps 6 \
		--weight-decay 0.1
	lay="dp 2 x tp 2"
	[ "$k" = 4 ] && lay="tp 4"
	compare_within "$model, $opt: $lay on 4 ranks = 1 rank" "t4-$model-$opt" "r1-$model-$opt"
done

# the parameter count: nanogpt-vpt15 holds 2 880 parameters (15 x 10 of wte); a TP
# rank's slice holds wte's 8 x 10 rows (one of padding on rank 1)
grep -q '^rank 1 tp 2 dp 1 model_bytes 11520 tp_slice_bytes 6160 ' "$tmp/t2-nanogpt-vpt15-sgd.out" &&
	grep -q '^rank 3 tp 2 dp 2 model_bytes 11520 ' "$tmp/t4-nanogpt-vpt15-sgd.out"
ok $? "sf_model_stats at tp 2 and 2 x 2: the model's 11520 bytes (2 880 parameters, wte's 15 rows), a TP slice of 6160 (8 rows of wte)" ||
	diag_file "$tmp/t2-nanogpt-vpt15-sgd.out"
# nanogpt-vpo9 at tp 4: rank 3's wte slice is padding alone; the model still 2 820
grep -q '^rank 3 tp 4 dp 1 model_bytes 11280 ' "$tmp/t4-nanogpt-vpo9-sgd.out"
ok $? "sf_model_stats at tp 4 of a vocabulary of 9: the model's 11280 bytes (2 820 parameters)" ||
	diag_file "$tmp/t4-nanogpt-vpo9-sgd.out"

# the export: the same tensors, shapes and offsets as 1 rank's
train 1 x1 --model nanogpt-vpt15 --optimizer sgd --steps 3 --export "$tmp/x1.safetensors"
train 2 x2 SHARDFLOW_TP=2 --model nanogpt-vpt15 --optimizer sgd --steps 3 \
	--export "$tmp/x2.safetensors"
python3 - "$tmp/x1.safetensors" "$tmp/x2.safetensors" <<'PY'
import json, struct, sys
def read(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), len(b)
(h1, n1), (h2, n2) = read(sys.argv[1]), read(sys.argv[2])
h1.pop("__metadata__", None), h2.pop("__metadata__", None)
ok = h1 == h2 and n1 == n2 and h1["transformer.wte.weight"]["shape"] == [15, 10]
sys.exit(0 if ok else 1)
PY
ok $? "tp 2's safetensors export: 1 rank's tensors, shapes (wte (15, 10)) and offsets" ||
	diag_file "$tmp/x2.err"

t22="SHARDFLOW_TP=2"
train_interval 1 clip1 --model nanogpt-vpt15 --optimizer sgd --steps 4 --clip 0.05
train 4 clip22 $t22 --model nanogpt-vpt15 --optimizer sgd --steps 4 --clip 0.05
n1=$(sed -n 's/^norm 4 //p' "$tmp/clip1.out") n4=$(sed -n 's/^norm 4 //p' "$tmp/clip22.out")
clipped_within clip22 clip1
ok $? "2 x 2 clipped: norm $n4 = 1 rank's $n1, the run = 1 rank's (within its rounding interval)"
diag_file "$tmp/clip.cmp"

train_interval 1 ig1 --model nanogpt-vpt15 --optimizer adamw --steps 5 --ignore-every 3 --evaluate 30
train 4 ig22 $t22 --model nanogpt-vpt15 --optimizer adamw --steps 5 --ignore-every 3 \
	--evaluate 30
compare_within "every third label ignored: 2 x 2 = 1 rank" ig22 ig1
e1=$(sed -n 's/^eval //p' "$tmp/ig1.out") e4=$(sed -n 's/^eval //p' "$tmp/ig22.out")
within_interval ig22 ig1 '^eval ' >"$tmp/ev.cmp"
ok $? "sf_model_evaluate of 30 samples at 2 x 2 = 1 rank's: $e4, $e1 (within its rounding interval)"
diag_file "$tmp/ev.cmp"

for opt in sgd adamw; do
	tp_ckpt_chain nanogpt-vpt15 $opt
	ok $? "$opt: checkpoint 2 x 2 (manifest tp 2) -> 4 x 1 -> 1 x 1 = 1 rank uninterrupted (within its rounding interval)"
	diag_file "$tmp/ck.cmp"
done

# examples/gpt on token files of the corpus's bytes, a vocabulary of 257 (tied head)
text="$tmp/corpus.txt"
sf_corpus "$text"
python3 - "$text" "$tmp/tr.bin" "$tmp/va.bin" "$tmp/bytes.vocab" <<'PY'
import math, struct, sys
b = open(sys.argv[1], "rb").read()
te = len(b) - int(math.floor(len(b) * 0.2))
open(sys.argv[2], "wb").write(b"".join(struct.pack("<H", x) for x in b[:te]))
open(sys.argv[3], "wb").write(b"".join(struct.pack("<H", x) for x in b[te:]))
h = struct.pack("<4I", 20240328, 2, 256, 10) + bytes(1008)
open(sys.argv[4], "wb").write(h + b"".join(bytes([1, i]) for i in range(256)))
PY
common="--layers 2 --heads 4 --embd 32 --context 32 --batch 8 --sample 1 --tokens 20 \
--eval-every 4 --eval-batches 1 --progress-every 1 --lr 0.004 --warmup 2 --steps 4 \
--train-tokens $tmp/tr.bin --val-tokens $tmp/va.bin --vocab-file $tmp/bytes.vocab --vocab 257"
gpt_run 1 p1 SHARDFLOW_LOG=warn --loss-log "$tmp/p1.loss"
gpt_run 2 p2 SHARDFLOW_TP=2 SHARDFLOW_LOG=info --loss-log "$tmp/p2.loss"
st=$?
[ "$st" = 0 ] && loss_logs_within "$tmp/p1.loss" "$tmp/p2.loss" 4
ok $? "examples/gpt --vocab 257, tied, tp 2 = tp 1: every step's loss" ||
	{ diag_file "$tmp/p2.err"; diag_file "$tmp/p2.loss"; diag_file "$tmp/p1.loss"; }
grep -q 'the loss is vocabulary-parallel: each of the 2 TP ranks holds 129 of the 257' \
	"$tmp/p2.err"
ok $? "auto takes the tied head of 257 classes vocabulary-parallel at tp 2 (129 a rank, padded)" ||
	diag_file "$tmp/p2.err"
gpt_filtered p1 >"$tmp/p1.f" && gpt_filtered p2 >"$tmp/p2.f" && cmp "$tmp/p1.f" "$tmp/p2.f" >/dev/null &&
	grep -q '^val_loss' "$tmp/p2.f" && grep -q '^sample 1:' "$tmp/p2.f"
ok $? "examples/gpt --vocab 257 at tp 2 = tp 1: val_loss and the sampled text" ||
	diff "$tmp/p1.f" "$tmp/p2.f" | sed 's/^/# /'

finish
