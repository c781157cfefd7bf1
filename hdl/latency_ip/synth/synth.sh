#!/usr/bin/env bash
# Synthesis sanity check of the Latencies IP with open tools.
#
#   hdl/latency_ip/synth/synth.sh [OUTDIR] [GENERIC=VALUE ...]
#
# 1. GHDL (Debian's ghdl 2.0, mcode back end) elaborates and synthesizes the
#    VHDL-2008 source and writes a Verilog netlist (ghdl --synth --out=verilog);
#    Debian has no yosys-ghdl plugin, so this is the bridge to yosys.
# 2. yosys maps the netlist onto Xilinx UltraScale+ primitives (synth_xilinx
#    -family xcup, the ZCU102 family of LATENCY-IP §5) and prints the cell
#    counts. No timing closure: this checks that the design is synthesizable,
#    latch-free, and that the sample RAM becomes a block RAM.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$(mktemp -d)}"
shift || true
mkdir -p "$out"
gen=()
for g in "$@"; do gen+=("-g$g"); done
cd "$out"
ghdl -a --std=08 --workdir="$out" "$here/../src/latency_ip.vhd"
ghdl --synth --std=08 --workdir="$out" --out=verilog "${gen[@]}" latency_ip > latency_ip_synth.v
if ! command -v yosys >/dev/null; then
  echo "yosys not installed: GHDL synthesis only (netlist in $out/latency_ip_synth.v)"
  exit 0
fi
yosys -q -l yosys.log -p "read_verilog latency_ip_synth.v; proc; tee -o latches.txt select -list t:\$dlatch t:\$adlatch t:\$dlatchsr; synth_xilinx -family xcup -top latency_ip; tee -o stat.txt stat"
sed -n '/Number of cells/,$p' stat.txt
