#!/usr/bin/env node
// gpt2-tokens.cjs — turns a text into GPT-2 token files with the real BPE: the npm
// registry's `tiktoken` (its `gpt2` ranks are bundled in the package, so this runs
// offline once the package is installed). scripts/install-deps.sh runs it once to make
// austen-gpt2-{train,val}.bin and gpt2-vocab.bin in /opt/shardflow-data.
//
//   node tools/gpt2-tokens.cjs --tiktoken DIR --text FILE --out PREFIX
//                              [--val-fraction X] [--vocab-out FILE]
//
// --tiktoken DIR   where `npm install --prefix DIR tiktoken` put the package
// --text FILE      the text (UTF-8); its tail --val-fraction (default 0.1, the split of
//                  sf_text_load(), moved forward to a character boundary) is held out
// --out PREFIX     writes PREFIX-train.bin and PREFIX-val.bin: llm.c shards (256
//                  little-endian int32: magic 20240520, version 1, the token count;
//                  then the uint16 ids), each split encoded on its own
// --vocab-out FILE the decode table, llm.c's tokenizer file: 256 little-endian uint32
//                  (magic 20240328, version 2, vocab size 50257, the end-of-text id
//                  50256), then per id a length byte and that many bytes
//
// Every split is checked to round-trip (decode(encode(text)) == text byte for byte)
// before anything is written; files are written whole (FILE.tmp, then renamed).
// Exit status: 0 done, 1 an error (named on stderr), 2 a bad command line.
"use strict";

const fs = require("fs");
const path = require("path");

const PROG = "gpt2-tokens";
const SHARD_MAGIC = 20240520;
const VOCAB_MAGIC = 20240328;

function fail(msg, code = 1) {
	process.stderr.write(`${PROG}: ${msg}\n`);
	process.exit(code);
}

function parseArgs(argv) {
	const o = { valFraction: 0.1 };
	const names = {
		"--tiktoken": "tiktoken",
		"--text": "text",
		"--out": "out",
		"--val-fraction": "valFraction",
		"--vocab-out": "vocabOut",
	};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === "-h" || a === "--help") {
			const src = fs.readFileSync(__filename, "utf8").split("\n");
			process.stdout.write(src.slice(1, 20).map((l) => l.replace(/^\/\/ ?/, "")).join("\n") + "\n");
			process.exit(0);
		}
		if (!(a in names)) fail(`unknown option "${a}" (accepted: ${Object.keys(names).join(", ")})`, 2);
		if (i + 1 >= argv.length) fail(`${a} needs a value`, 2);
		o[names[a]] = argv[++i];
	}
	for (const k of ["--tiktoken", "--text", "--out"])
		if (o[names[k]] === undefined) fail(`${k} is required (--help for usage)`, 2);
	const vf = Number(o.valFraction);
	if (!(vf >= 0.001 && vf <= 0.5)) fail(`--val-fraction "${o.valFraction}" is invalid: expected a number in [0.001, 0.5]`, 2);
	o.valFraction = vf;
	return o;
}

// Writes buf to file whole: file.tmp, then renamed over file.
function writeWhole(file, buf) {
	const tmp = `${file}.tmp`;
	try {
		fs.writeFileSync(tmp, buf);
		fs.renameSync(tmp, file);
	} catch (e) {
		try { fs.unlinkSync(tmp); } catch (_) { /* not there */ }
		fail(`cannot write ${file}: ${e.message}`);
	}
}

// An llm.c shard of uint16 ids.
function shard(ids) {
	const header = new Int32Array(256);
	header[0] = SHARD_MAGIC;
	header[1] = 1;
	header[2] = ids.length;
	const body = new Uint16Array(ids.length);
	for (let i = 0; i < ids.length; i++) {
		if (ids[i] > 65535) fail(`token id ${ids[i]} does not fit uint16`);
		body[i] = ids[i];
	}
	return Buffer.concat([Buffer.from(header.buffer), Buffer.from(body.buffer)]);
}

// The decode table in llm.c's tokenizer format (version 2: the end-of-text id in the
// header).
function vocabTable(enc, nVocab, eot) {
	const header = new Uint32Array(256);
	header[0] = VOCAB_MAGIC;
	header[1] = 2;
	header[2] = nVocab;
	header[3] = eot;
	const parts = [Buffer.from(header.buffer)];
	for (let id = 0; id < nVocab; id++) {
		const b = Buffer.from(enc.decode_single_token_bytes(id));
		if (b.length < 1 || b.length > 255) fail(`token ${id} has ${b.length} bytes: the table stores 1 to 255`);
		parts.push(Buffer.from([b.length]), b);
	}
	return Buffer.concat(parts);
}

function main() {
	const o = parseArgs(process.argv.slice(2));
	const t0 = Date.now();
	let tiktoken;
	const pkg = path.join(path.resolve(o.tiktoken), "node_modules", "tiktoken");
	try {
		tiktoken = require(pkg);
	} catch (e) {
		fail(`cannot load tiktoken from ${pkg} (${e.code || e.message}): install it with ` +
			`npm install --prefix ${o.tiktoken} tiktoken`);
	}
	let text;
	try {
		text = fs.readFileSync(o.text);
	} catch (e) {
		fail(`cannot read --text ${o.text}: ${e.message}`);
	}
	if (text.length < 2) fail(`--text ${o.text} has ${text.length} bytes: too short to split`);
	// sf_text_load()'s split, then forward to the first byte that starts a character
	let cut = text.length - Math.floor(text.length * o.valFraction);
	while (cut < text.length && (text[cut] & 0xc0) === 0x80) cut++;
	if (cut >= text.length) fail(`--text ${o.text}: nothing left for validation after byte ${cut}`);
	const splits = { train: text.subarray(0, cut), val: text.subarray(cut) };
	const decoder = new TextDecoder("utf-8", { fatal: true });

	const enc = tiktoken.get_encoding("gpt2");
	const nVocab = 50257, eot = 50256;
	const out = {};
	for (const [name, bytes] of Object.entries(splits)) {
		let s;
		try {
			s = decoder.decode(bytes);
		} catch (e) {
			fail(`--text ${o.text}: the ${name} split is not valid UTF-8 (${e.message})`);
		}
		const ids = enc.encode_ordinary(s);
		const back = Buffer.from(enc.decode(ids));
		if (!back.equals(bytes)) fail(`the ${name} split does not round-trip: decode(encode(text)) != text`);
		out[name] = ids;
	}
	for (const [name, ids] of Object.entries(out))
		writeWhole(`${o.out}-${name}.bin`, shard(ids));
	if (o.vocabOut) writeWhole(o.vocabOut, vocabTable(enc, nVocab, eot));
	enc.free();
	const n = out.train.length + out.val.length;
	process.stdout.write(
		`${PROG}: ${o.text}: ${splits.train.length} + ${splits.val.length} bytes -> ` +
		`${out.train.length} + ${out.val.length} GPT-2 tokens (${(text.length / n).toFixed(2)} bytes a token); ` +
		`decode(encode(text)) == text for both splits; wrote ${o.out}-train.bin, ${o.out}-val.bin` +
		`${o.vocabOut ? ", " + o.vocabOut : ""} (${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
}

main();
