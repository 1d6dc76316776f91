#!/bin/sh
# Generates configure and the Makefile.in files (needs autoconf, automake, libtool).
set -e
cd "$(dirname "$0")"
mkdir -p build-aux m4
autoreconf --install --force
