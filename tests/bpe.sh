#!/bin/sh
# bpe.sh — GPT-2's byte-level BPE in C (sf_vocab_encode, data/bpe.c) against the npm
# tokenizer (tools/gpt2-tokens.cjs: tiktoken's gpt2), and --prompt with token files.
#  - a fixed corpus (below: English with contractions in both cases, whitespace runs,
#    tabs, trailing spaces and blank lines, code, URLs, numbers, accented Latin, Greek,
#    Cyrillic, CJK, Hangul, Arabic, Hebrew, Devanagari, emoji with modifiers and flags,
#    typographic punctuation), then its lines in reverse order, split by gpt2-tokens.cjs into its two parts:
#    tests/bpe_encode's ids of each part are the shard's, id for id (cmp);
#  - examples/gpt on those token files with --prompt "It's a truth" prints samples that
#    start with the prompt's text (encoded, then decoded by the same table).
# Skipped when node, the tiktoken package or the decode table
# (scripts/install-deps.sh) is missing.
. "$(dirname "$0")/lib.sh"
ENC="$top_builddir/tests/bpe_encode"
GPT="$top_builddir/examples/gpt"
require_progs "$ENC" "$GPT"
data=${SF_DATA_PREFIX:-/opt/shardflow-data}
vocab="$data/gpt2-vocab.bin"
command -v node >/dev/null 2>&1 || skip_all "no node (scripts/install-deps.sh installs it)"
[ -d "$data/tiktoken/node_modules/tiktoken" ] ||
	skip_all "no $data/tiktoken (scripts/install-deps.sh: npm install tiktoken)"
[ -f "$vocab" ] || skip_all "no $vocab (scripts/install-deps.sh makes it)"
limit=${SF_TEST_TIMEOUT:-300}

plan 3

cat >"$tmp/c.txt" <<'TEXT'
It's a truth universally acknowledged, that a single man in possession of a good fortune
must be in want of a wife. I'm sure they'll say we've done it; you're right, he'd agree.
DON'T SHOUT: IT'S LOUD. She said "I'LL go" -- and 'twas done... O'Neill's cat's toys.

    Indented    with   runs of   spaces,	tabs	and
trailing spaces   
and blank lines



Numbers: 3.14159, 1,000,000, 2026-11-28, 0x1F, 1e-5, 42nd, ³², 100%... $9.99 & €5.
Code: for (int i = 0; i < n; i++) { x[i] += y[i] * 2; } // done!!! ?? ;; @user #tag
URLs: https://example.com/path?q=1&r=two#frag  mailto:someone@example.org
Français: déjà vu, naïve café, où est la bibliothèque? Ça va très bien, merci.
Deutsch: Größe, Straße, Übermäßig schön. Español: ¿Qué tal? ¡Muy bien! niño, año.
Ελληνικά: Καλημέρα κόσμε. Русский: Привет, мир! Как дела? Україна.
中文：你好，世界！日本語：こんにちは、世界。カタカナ。한국어: 안녕하세요 세계.
العربية: مرحبا بالعالم. עברית: שלום עולם. हिन्दी: नमस्ते दुनिया।
Emoji: 😀 🎉👍🏽 ❤️ 🇫🇷 — “smart quotes” ‘single’ … • ★ ✓ ∑ ∞ ≠ ≤ → ←
Mixed:abc123def 12abc abc12 a1b2c3  __init__ self.x_y = -1   +2  ~3 ^4
Whitespace at end of line then newline 	
 leading space line
  two leading spaces
	tab leading
TEXT
{ cat "$tmp/c.txt"; tac "$tmp/c.txt"; } >"$tmp/corpus.txt" # the second half line by line reversed
node "$top_srcdir/tools/gpt2-tokens.cjs" --tiktoken "$data/tiktoken" --text "$tmp/corpus.txt" \
	--out "$tmp/p" --val-fraction 0.5 >"$tmp/npm.out" 2>&1 || bail_out "gpt2-tokens.cjs failed: $(cat "$tmp/npm.out")"
# its split: sf_text_load's, moved forward to the first byte that starts a character
/usr/bin/python3 - "$tmp/corpus.txt" "$tmp/train.txt" "$tmp/val.txt" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
cut = len(b) - int(len(b) * 0.5)
while cut < len(b) and (b[cut] & 0xC0) == 0x80:
    cut += 1
open(sys.argv[2], "wb").write(b[:cut])
open(sys.argv[3], "wb").write(b[cut:])
PY
for s in train val; do
	tail -c +1025 "$tmp/p-$s.bin" >"$tmp/$s.ref" # llm.c's header: 256 int32
	"$ENC" "$vocab" "$tmp/$s.txt" "$tmp/$s.ids" 2>"$tmp/$s.err"
	st=$?
	[ $st -eq 0 ] && [ -s "$tmp/$s.ref" ] && cmp "$tmp/$s.ids" "$tmp/$s.ref" >"$tmp/$s.cmp" 2>&1
	ok $? "the $s part ($(wc -c <"$tmp/$s.txt") bytes, $(($(wc -c <"$tmp/$s.ref") / 2)) tokens): sf_vocab_encode's ids = tiktoken's ($(cat "$tmp/$s.err" "$tmp/$s.cmp" | tr '\n' ' '))"
done

timeout -k 5 "$limit" "$GPT" --layers 1 --heads 2 --embd 32 --context 16 --batch 2 --steps 2 \
	--eval-every 1000 --eval-batches 1 --train-tokens "$tmp/p-train.bin" \
	--val-tokens "$tmp/p-val.bin" --vocab-file "$vocab" --prompt "It's a truth" --sample 2 \
	--tokens 4 </dev/null >"$tmp/gpt.out" 2>"$tmp/gpt.err"
st=$?
n=$(grep -A1 '^sample [12]:$' "$tmp/gpt.out" | grep -c "^It's a truth")
[ $st -eq 0 ] && [ "$n" -eq 2 ]
ok $? "examples/gpt --prompt \"It's a truth\" on GPT-2 token files: 2 samples start with it (exit $st)" ||
	{ diag_file "$tmp/gpt.err"; diag_file "$tmp/gpt.out"; }
finish
