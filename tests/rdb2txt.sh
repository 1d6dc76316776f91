#!/bin/sh
# rdb2txt.sh — shardflow-rdb2txt on R lazy-load databases written by tests/rdb_fixture
# (as R writes them; R is not needed) and on damaged copies of them.
#
# Proves: the text of named character vectors, in the order asked, is exact for
# serialization versions 3 and 2, zlib / per-blob 'Z' and '0' / uncompressed blobs,
# a gzip and a plain index (NA as an empty line, Latin-1 converted to UTF-8, a long
# vector length, attributes with a nested list and a symbol reference); -o writes the
# file whole; --list names every object; and each bad input — a truncated .rdb, a
# corrupt zlib stream, a cut index, an offset past the end, bytes that are not an
# index, a missing or empty file, an object that is not text, an unknown name, xz and
# bzip2 blobs, invalid UTF-8, a non-UTF-8 native encoding (converted when Latin-1) —
# exits 1 with a message naming the file and the problem, never a crash; a bad
# command line exits 2. With Debian's r-cran-janeaustenr data at hand (the installer's
# corpus), its first lines are checked too.
. "$(dirname "$0")/lib.sh"
TOOL="$top_builddir/tools/shardflow-rdb2txt"
FIX="$top_builddir/tests/rdb_fixture"
require_progs "$TOOL" "$FIX"

plan 36

names="alpha beta gamma"

# made VARIANT: a fresh database in $tmp/VARIANT
made() {
	mkdir -p "$tmp/$1" && "$FIX" "$tmp/$1" "$1" || bail_out "rdb_fixture $1 failed"
}

for v in v3 v2 stored; do
	made $v
	# shellcheck disable=SC2086
	"$TOOL" "$tmp/$v/Rdata" $names >"$tmp/$v.txt" 2>"$tmp/$v.err" &&
		cmp -s "$tmp/$v.txt" "$tmp/$v/expected.txt"
	ok $? "$v: the text of alpha, beta, gamma is exact" || {
		diag_file "$tmp/$v.err"
		od -c "$tmp/$v.txt" | head -20 | sed 's/^/# /'
	}
done

# shellcheck disable=SC2086
"$TOOL" -o "$tmp/out.txt" "$tmp/v3/Rdata.rdb" $names 2>"$tmp/o.err" &&
	cmp -s "$tmp/out.txt" "$tmp/v3/expected.txt" && [ ! -e "$tmp/out.txt.tmp" ]
ok $? "-o FILE (the DB named by its .rdb) writes the same text, no .tmp left" || diag_file "$tmp/o.err"
grep -q "9 lines (1 NA), 64 bytes" "$tmp/o.err"
ok $? "-o reports lines, NAs and bytes" || diag_file "$tmp/o.err"

"$TOOL" "$tmp/v3/Rdata.rdx" gamma alpha >"$tmp/ga.txt" 2>/dev/null &&
	printf 'g1\ng2\nFirst line\n\n\nlast of alpha\n' | cmp -s - "$tmp/ga.txt"
ok $? "the order of the names is the order of the text (DB named by its .rdx)"

"$TOOL" --list "$tmp/v2/Rdata" >"$tmp/list.out" 2>&1
st=$?
[ $st -eq 0 ] && grep -q "^alpha	.*4 lines	27 bytes of text" "$tmp/list.out" &&
	grep -q "^num	.*not a character vector" "$tmp/list.out" && grep -q "compression 3" "$tmp/list.out"
ok $? "--list names each object, its lines, and what is not text" || diag_file "$tmp/list.out"

"$TOOL" --help >"$tmp/help.out" 2>&1 && grep -q "^usage: shardflow-rdb2txt" "$tmp/help.out"
ok $? "--help prints the usage, exit 0"

# refused CASE-DESC PATTERN ARGS...: exit 1 (not a crash, no signal), message matching
refused() {
	_desc=$1
	_pat=$2
	shift 2
	"$TOOL" "$@" >"$tmp/r.out" 2>"$tmp/r.err"
	_st=$?
	[ $_st -eq 1 ] && grep -q -- "$_pat" "$tmp/r.err" && ! grep -q . "$tmp/r.out"
	ok $? "$_desc: exit 1, \"$_pat\"" || {
		diag "exit status $_st"
		diag_file "$tmp/r.err"
	}
}

refused "an object that is not text" "object 'num' .*an integer vector, not a character vector" "$tmp/v3/Rdata"
refused "an unknown name" "Rdata.rdx has no object 'delta'" "$tmp/v3/Rdata" alpha delta
refused "a missing database" "cannot open the index $tmp/none.rdx: No such file" "$tmp/none"
made xz
refused "an xz blob" "object 'alpha'.*xz-compressed: this tool reads zlib and stored" "$tmp/xz/Rdata" alpha
made bz2
refused "a bzip2 blob" "bzip2-compressed" "$tmp/bz2/Rdata" alpha
"$TOOL" "$tmp/xz/Rdata" beta gamma >"$tmp/xzbg.txt" 2>/dev/null
ok $? "the other blobs of that database (zlib) still read"
made badoff
refused "an offset past the end" "object 'gamma': the index puts it at bytes \[" "$tmp/badoff/Rdata" gamma
made badutf8
refused "invalid UTF-8" "string 1 is not valid UTF-8 (byte 0xc3 at position 5)" "$tmp/badutf8/Rdata" alpha
made latin1
"$TOOL" "$tmp/latin1/Rdata" alpha >"$tmp/l1.txt" 2>"$tmp/l1.err" && [ "$(head -1 "$tmp/l1.txt")" = "naïve" ]
ok $? "a string unmarked in a Latin-1 writer's file becomes UTF-8" || diag_file "$tmp/l1.err"

# damaged copies of v3 (zlib blobs, gzip index) and v2 (plain index)
cp -r "$tmp/v3" "$tmp/d"
size=$(wc -c <"$tmp/v3/Rdata.rdb")
head -c $((size - 7)) "$tmp/v3/Rdata.rdb" >"$tmp/d/Rdata.rdb"
refused "a truncated .rdb" "Rdata.rdb: object 'num'.*the database has $((size - 7)) bytes" "$tmp/d/Rdata"
head -c 30 "$tmp/v3/Rdata.rdb" >"$tmp/d/Rdata.rdb"
refused "an .rdb cut inside the first blob" "object 'alpha'" "$tmp/d/Rdata" alpha

# a corrupt zlib stream: bytes 10..13 of the first blob (inside its deflate data)
cp "$tmp/v3/Rdata.rdb" "$tmp/d/Rdata.rdb"
printf '\377\377\377\377' | dd of="$tmp/d/Rdata.rdb" bs=1 seek=10 conv=notrunc 2>/dev/null
refused "a corrupt zlib stream" "object 'alpha' at bytes \[0, [0-9]*): corrupt zlib stream (" "$tmp/d/Rdata" alpha
# the declared length one too small
cp "$tmp/v3/Rdata.rdb" "$tmp/d/Rdata.rdb"
b3=$(od -An -tu1 -j3 -N1 "$tmp/v3/Rdata.rdb" | tr -d ' ')
printf "\\$(printf %o $((b3 - 1)))" | dd of="$tmp/d/Rdata.rdb" bs=1 seek=3 conv=notrunc 2>/dev/null
refused "a blob declaring one byte less than it holds" "object 'alpha'.*more than the declared" "$tmp/d/Rdata" alpha
# a corrupt serialization inside a stored blob (v2: beta is stored, '0'): its type byte
cp -r "$tmp/v2" "$tmp/e"
off=$("$TOOL" --list "$tmp/v2/Rdata" | sed -n 's/^beta	offset \([0-9]*\).*/\1/p')
# blob: 4-byte length, '0', "X\n", version, 2 R versions, then the vector's flags
printf '\007' | dd of="$tmp/e/Rdata.rdb" bs=1 seek=$((off + 5 + 2 + 12 + 3)) conv=notrunc 2>/dev/null
refused "a stored object whose type is damaged" "object 'beta'.*an R builtin function (type 7) at byte 14: only data" "$tmp/e/Rdata" beta
cp "$tmp/v2/Rdata.rdb" "$tmp/e/Rdata.rdb"
printf 'A' | dd of="$tmp/e/Rdata.rdb" bs=1 seek=$((off + 5)) conv=notrunc 2>/dev/null
refused "an ASCII serialization" "only XDR" "$tmp/e/Rdata" beta
cp "$tmp/v2/Rdata.rdb" "$tmp/e/Rdata.rdb"
printf '\377\377\377\377' | dd of="$tmp/e/Rdata.rdb" bs=1 seek=$((off + 5 + 2 + 12 + 8)) conv=notrunc 2>/dev/null
refused "a long-vector length with its upper half negative" "character vector at byte 18 has a negative length" "$tmp/e/Rdata" beta

# the index
isize=$(wc -c <"$tmp/v3/Rdata.rdx")
head -c $((isize - 9)) "$tmp/v3/Rdata.rdx" >"$tmp/d/Rdata.rdx"
refused "a gzip index cut short" "Rdata.rdx: its gzip stream is cut short" "$tmp/d/Rdata"
psize=$(wc -c <"$tmp/v2/Rdata.rdx")
head -c $((psize - 3)) "$tmp/v2/Rdata.rdx" >"$tmp/e/Rdata.rdx"
refused "a plain index cut short" "Rdata.rdx: truncated serialization" "$tmp/e/Rdata"
{ cat "$tmp/v2/Rdata.rdx"; printf 'xy'; } >"$tmp/e/Rdata.rdx"
refused "an index with trailing bytes" "2 trailing byte(s) after the serialized object" "$tmp/e/Rdata"
printf 'hello, world\n' >"$tmp/d/Rdata.rdx"
refused "a text file as index" "not an R serialization" "$tmp/d/Rdata"
: >"$tmp/d/Rdata.rdx"
refused "an empty index" "the index $tmp/d/Rdata.rdx is empty" "$tmp/d/Rdata"
cp "$tmp/v2/Rdata.rdx" "$tmp/e/Rdata.rdx"
printf '\000\000\000\004' | dd of="$tmp/e/Rdata.rdx" bs=1 seek=2 conv=notrunc 2>/dev/null
refused "serialization version 4" "format version 4: versions 2 and 3 are read" "$tmp/e/Rdata"
# an index that is a valid serialization of something else: num's blob in "stored"
# (compressed = FALSE: the blob is the serialization itself)
mkdir -p "$tmp/f" && cp "$tmp/v2/Rdata.rdb" "$tmp/f/Rdata.rdb"
"$TOOL" --list "$tmp/stored/Rdata" | sed -n 's/^num	offset \([0-9]*\)	stored \([0-9]*\).*/\1 \2/p' >"$tmp/numpos"
read -r noff nlen <"$tmp/numpos"
dd if="$tmp/stored/Rdata.rdb" of="$tmp/f/Rdata.rdx" bs=1 skip="$noff" count="$nlen" 2>/dev/null
refused "an index that is an integer vector" "the index is an integer vector, not a list" "$tmp/f/Rdata"
: >"$tmp/f/Rdata.rdb"
cp "$tmp/v2/Rdata.rdx" "$tmp/f/Rdata.rdx"
refused "an empty database" "the database $tmp/f/Rdata.rdb is empty" "$tmp/f/Rdata"
mkdir -p "$tmp/g/Rdata.rdb"
cp "$tmp/v2/Rdata.rdx" "$tmp/g/Rdata.rdx"
refused "a directory as database" "is not a regular file" "$tmp/g/Rdata"

"$TOOL" --frobnicate "$tmp/v3/Rdata" >/dev/null 2>"$tmp/u.err"
[ $? -eq 2 ] && grep -q 'unknown option "--frobnicate"' "$tmp/u.err"
ok $? "an unknown option: exit 2, named"
"$TOOL" >/dev/null 2>"$tmp/u.err"
[ $? -eq 2 ] && grep -q "no database given" "$tmp/u.err"
ok $? "no database: exit 2"

# the real package, when its data is at hand (scripts/install-deps.sh downloads it)
austen=${SF_AUSTEN_RDB:-}
if [ -z "$austen" ]; then
	for d in /usr/lib/R/site-library/janeaustenr/data/Rdata "${SF_DATA_PREFIX:-/opt/shardflow-data}/janeaustenr/Rdata"; do
		[ -f "$d.rdb" ] && austen=$d && break
	done
fi
if [ -n "$austen" ] && [ -f "$austen.rdb" ]; then
	"$TOOL" "$austen" sensesensibility prideprejudice >"$tmp/a.txt" 2>"$tmp/a.err" &&
		[ "$(head -1 "$tmp/a.txt")" = "SENSE AND SENSIBILITY" ] &&
		grep -q "^PRIDE AND PREJUDICE$" "$tmp/a.txt"
	ok $? "janeaustenr ($austen): two novels, their titles" || diag_file "$tmp/a.err"
else
	skip "janeaustenr's data" "not found (SF_AUSTEN_RDB, /usr/lib/R/site-library/janeaustenr, \$SF_DATA_PREFIX/janeaustenr/Rdata)"
fi
finish
