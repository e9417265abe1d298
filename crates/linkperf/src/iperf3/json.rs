//! iperf3 -J layout.
