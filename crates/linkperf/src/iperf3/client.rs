//! linkperf client against a stock iperf3 server.
