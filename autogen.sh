#!/bin/sh
# Generates configure and the Makefile.in files (needs autoconf, automake, libtool),
# after the op and optimizer families' lists (scripts/families.sh).
set -e
cd "$(dirname "$0")"
sh scripts/families.sh
mkdir -p build-aux m4
autoreconf --install --force
