"""The benchmarks behind tools/bench.py: decoding against peers (workloads, peers, library_peers,
measure, torchcodec_venv, report, cli), and encode, images, targets, decode_work, threads and
resize_routes, which ``python tools/bench.py NAME`` runs."""
