// linkperf's ns-3 twin of testbed paths (docs/simulate.md): nodes joined by
// point-to-point links (--links), routed by shortest path, and groups of bulk
// TCP flows between them (--flows: one group per measured test, one flow per
// stream, each group with its own congestion control, window clamp, buffers
// and segment size), every result printed as one JSON object per line.
// Every parameter comes from the command line; linkperf builds this file once
// into its cache and runs the binary (crates/linkperf/src/simulate/). Link
// schedule steps (--steps) change a direction's rate, queue and loss and a
// link's delay at their times while the flows run.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

// One link between nodes a and b.
struct Hop {
  uint32_t a, b;
  double rate_ab, rate_ba;  // bit/s as ns-3 charges them (PPP framing)
  double delay_s;           // one way, both directions
  uint32_t queue_ab, queue_ba;  // packets
  double loss_ab, loss_ba;  // per packet
  uint32_t mtu;
};

static std::vector<std::string> Split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The ':'-separated fields of each ','-separated item of `s`; an item without
// `n` fields, or (nodes > 0) whose first two fields are not node numbers below
// `nodes`, ends the program naming it.
static std::vector<std::vector<std::string>> Items(const std::string &s, size_t n,
                                                   uint32_t nodes, const char *what) {
  std::vector<std::vector<std::string>> items;
  for (const auto &item : Split(s, ',')) {
    auto f = Split(item, ':');
    if (f.size() != n || (nodes > 0 && (std::stoul(f[0]) >= nodes || std::stoul(f[1]) >= nodes))) {
      std::fprintf(stderr, "bad %s '%s'\n", what, item.c_str());
      std::exit(2);
    }
    items.push_back(f);
  }
  return items;
}

// "a:b:rate_ab:rate_ba:delay_s:queue_ab:queue_ba:loss_ab:loss_ba:mtu,..."
static std::vector<Hop> ParseLinks(const std::string &s, uint32_t nodes) {
  std::vector<Hop> hops;
  for (const auto &f : Items(s, 10, nodes, "link")) {
    hops.push_back({(uint32_t)std::stoul(f[0]), (uint32_t)std::stoul(f[1]), std::stod(f[2]),
                    std::stod(f[3]), std::stod(f[4]), (uint32_t)std::stoul(f[5]),
                    (uint32_t)std::stoul(f[6]), std::stod(f[7]), std::stod(f[8]),
                    (uint32_t)std::stoul(f[9])});
  }
  return hops;
}

// One measured test: `streams` bulk flows from node src to node dst until
// `stop_s`, its TCP options those of the measurement.
struct Group {
  uint32_t src, dst, streams;
  std::string cc;
  uint32_t clamp;  // congestion window clamp, segments (0: none)
  uint64_t rcvbuf, sndbuf;
  uint32_t segment;
  double stop_s;
};

// "src:dst:streams:cc:clamp:rcvbuf:sndbuf:segment:stop_s,...", cc without "ns3::"
static std::vector<Group> ParseGroups(const std::string &s, uint32_t nodes) {
  std::vector<Group> groups;
  for (const auto &f : Items(s, 9, nodes, "flow group")) {
    groups.push_back({(uint32_t)std::stoul(f[0]), (uint32_t)std::stoul(f[1]),
                      (uint32_t)std::stoul(f[2]), "ns3::" + f[3], (uint32_t)std::stoul(f[4]),
                      std::stoull(f[5]), std::stoull(f[6]), (uint32_t)std::stoul(f[7]),
                      std::stod(f[8])});
  }
  return groups;
}

// One change of a schedule step: direction `side` (0: a -> b) of hop `hop`.
struct Step {
  double at_s, loss_at_s;  // the loss changes when the packets it hits arrive
  uint32_t hop, side;
  double rate, loss, delay_s;
  uint32_t queue;
};

// "at:loss_at:hop:side:rate:queue:loss:delay_s,..."
static std::vector<Step> ParseSteps(const std::string &s) {
  std::vector<Step> steps;
  for (const auto &f : Items(s, 8, 0, "step")) {
    steps.push_back({std::stod(f[0]), std::stod(f[1]), (uint32_t)std::stoul(f[2]),
                     (uint32_t)std::stoul(f[3]), std::stod(f[4]), std::stod(f[6]),
                     std::stod(f[7]), (uint32_t)std::stoul(f[5])});
  }
  return steps;
}

// What a schedule step reaches on one hop: its devices (dev[0] sends a -> b),
// its channel, and the error model hitting what dev[k] sends (on the other end).
struct Link {
  Ptr<PointToPointNetDevice> dev[2];
  Ptr<PointToPointChannel> channel;
  Ptr<RateErrorModel> loss[2];
};
static std::vector<Link> links;

static DataRate RateOf(double bps) {
  // No rate: a very fast line (the emulator's unlimited direction).
  return DataRate(bps > 0 ? (uint64_t)bps : 100000000000ULL);
}

// A drop-tail limit; one below the content drops the excess from the tail, as
// the emulator does (ns-3 refuses a limit below the current size).
static void SetQueueLimit(Ptr<Queue<Packet>> q, uint32_t packets) {
  QueueSize size(QueueSizeUnit::PACKETS, packets);
  if (q->GetNPackets() <= packets) {
    q->SetMaxSize(size);
    return;
  }
  std::vector<Ptr<Packet>> held;
  while (Ptr<Packet> p = q->Dequeue()) held.push_back(p);
  q->SetMaxSize(size);
  for (auto &p : held) q->Enqueue(p);
}

static void ApplyLink(uint32_t hop, uint32_t side, double rate, uint32_t queue, double delay) {
  Link &l = links[hop];
  l.dev[side]->SetDataRate(RateOf(rate));
  SetQueueLimit(l.dev[side]->GetQueue(), queue);
  l.channel->SetAttribute("Delay", TimeValue(Seconds(delay)));
}

static void ApplyLoss(uint32_t hop, uint32_t side, double loss) { links[hop].loss[side]->SetRate(loss); }

// Linux's route metric `cwnd lock N` (snd_cwnd_clamp): the congestion window
// never grows past N segments. A congestion control of the inner type, its
// growth cut at the clamp; everything else goes to it unchanged. The inner type
// and the clamp are those in force when the socket is made (ConfigureGroup).
static TypeId clampedInner;
static uint32_t cwndClamp = 0;  // segments

class ClampedCongestion : public TcpCongestionOps {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("ns3::LinkperfClampedCongestion")
                            .SetParent<TcpCongestionOps>()
                            .AddConstructor<ClampedCongestion>();
    return tid;
  }
  ClampedCongestion() : m_clamp(cwndClamp) {
    ObjectFactory factory;
    factory.SetTypeId(clampedInner);
    m_inner = factory.Create<TcpCongestionOps>();
  }
  ClampedCongestion(const ClampedCongestion &other)
      : TcpCongestionOps(other), m_inner(other.m_inner->Fork()), m_clamp(other.m_clamp) {}
  std::string GetName() const override { return m_inner->GetName(); }
  void Init(Ptr<TcpSocketState> tcb) override { m_inner->Init(tcb); }
  uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t inFlight) override {
    return m_inner->GetSsThresh(tcb, inFlight);
  }
  void IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t acked) override {
    m_inner->IncreaseWindow(tcb, acked);
    uint32_t limit = m_clamp * tcb->m_segmentSize;
    if (tcb->m_cWnd.Get() > limit) tcb->m_cWnd = limit;
  }
  void PktsAcked(Ptr<TcpSocketState> tcb, uint32_t acked, const Time &rtt) override {
    m_inner->PktsAcked(tcb, acked, rtt);
  }
  void CongestionStateSet(Ptr<TcpSocketState> tcb,
                          const TcpSocketState::TcpCongState_t state) override {
    m_inner->CongestionStateSet(tcb, state);
  }
  void CwndEvent(Ptr<TcpSocketState> tcb, const TcpSocketState::TcpCAEvent_t event) override {
    m_inner->CwndEvent(tcb, event);
  }
  bool HasCongControl() const override { return m_inner->HasCongControl(); }
  void CongControl(Ptr<TcpSocketState> tcb, const TcpRateOps::TcpRateConnection &rc,
                   const TcpRateOps::TcpRateSample &rs) override {
    m_inner->CongControl(tcb, rc, rs);
  }
  Ptr<TcpCongestionOps> Fork() override { return CopyObject<ClampedCongestion>(this); }

 private:
  Ptr<TcpCongestionOps> m_inner;
  uint32_t m_clamp;
};
NS_OBJECT_ENSURE_REGISTERED(ClampedCongestion);

// What one flow's sender did, kept by trace sinks.
struct FlowState {
  uint32_t group = 0, stream = 0;  // the stream's place in its group
  double stop_s = 0;
  Ptr<BulkSendApplication> app;
  Ptr<PacketSink> sink;
  uint32_t cwnd = 0, ssthresh = 0xffffffff, inflight = 0;
  double srtt_ms = -1;
  uint64_t retrans = 0, max_seq = 0, sent = 0, acked = 0;
  uint32_t first_seq = 0;
  bool seen = false;
  // The previous sample's and interval's counters.
  uint64_t s_sent = 0, s_acked = 0, s_rx = 0, i_sent = 0, i_rx = 0, i_retrans = 0;
};

static std::vector<FlowState> flows;
static NodeContainer nodes;
static std::vector<Group> groups;

static void OnCwnd(FlowState *f, uint32_t, uint32_t v) { f->cwnd = v; }
static void OnSsthresh(FlowState *f, uint32_t, uint32_t v) { f->ssthresh = v; }
static void OnInflight(FlowState *f, uint32_t, uint32_t v) { f->inflight = v; }
static void OnRtt(FlowState *f, Time, Time v) { f->srtt_ms = v.GetSeconds() * 1e3; }
static void OnAck(FlowState *f, SequenceNumber32, SequenceNumber32 v) {
  if (f->seen && v.GetValue() > f->first_seq) f->acked = v.GetValue() - f->first_seq - 1;
}
// A data segment below the highest sequence already sent is a retransmission.
static void OnTx(FlowState *f, Ptr<const Packet> p, const TcpHeader &h, Ptr<const TcpSocketBase>) {
  uint32_t len = p->GetSize();
  if (len == 0) return;
  if (!f->seen) {
    f->seen = true;
    f->first_seq = h.GetSequenceNumber().GetValue() - 1;
  }
  uint64_t seq = h.GetSequenceNumber().GetValue() - f->first_seq - 1;
  if (seq < f->max_seq) {
    f->retrans++;
  } else {
    f->max_seq = seq + len;
    f->sent = f->max_seq;
  }
}

static void Connect(uint32_t i) {
  Ptr<Socket> s = flows[i].app->GetSocket();
  FlowState *f = &flows[i];
  s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnCwnd, f));
  s->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&OnSsthresh, f));
  s->TraceConnectWithoutContext("BytesInFlight", MakeBoundCallback(&OnInflight, f));
  s->TraceConnectWithoutContext("RTT", MakeBoundCallback(&OnRtt, f));
  s->TraceConnectWithoutContext("HighestRxAck", MakeBoundCallback(&OnAck, f));
  s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnTx, f));
}

static void Sample(double period, double end) {
  double t = Simulator::Now().GetSeconds();
  for (uint32_t i = 0; i < flows.size(); i++) {
    FlowState &f = flows[i];
    if (t > f.stop_s + 1e-9) continue;
    uint64_t rx = f.sink->GetTotalRx();
    std::printf("{\"type\":\"sample\",\"group\":%u,\"flow\":%u,\"t\":%.6f,\"sent\":%llu,"
                "\"acked\":%llu,\"received\":%llu,\"cwnd\":%u,\"inflight\":%u,\"retrans\":%llu",
                f.group, f.stream, t, (unsigned long long)(f.sent - f.s_sent),
                (unsigned long long)(f.acked - f.s_acked), (unsigned long long)(rx - f.s_rx),
                f.cwnd, f.inflight, (unsigned long long)f.retrans);
    if (f.ssthresh < 0x7fffffff) std::printf(",\"ssthresh\":%u", f.ssthresh);
    if (f.srtt_ms >= 0) std::printf(",\"srtt_ms\":%.4f", f.srtt_ms);
    std::printf("}\n");
    f.s_sent = f.sent;
    f.s_acked = f.acked;
    f.s_rx = rx;
  }
  if (t + period <= end + 1e-9) Simulator::Schedule(Seconds(period), &Sample, period, end);
}

static void Interval(double start, double length, double end) {
  double t = Simulator::Now().GetSeconds();
  for (uint32_t i = 0; i < flows.size(); i++) {
    FlowState &f = flows[i];
    if (start >= f.stop_s - 1e-9) continue;
    uint64_t rx = f.sink->GetTotalRx();
    std::printf("{\"type\":\"interval\",\"group\":%u,\"flow\":%u,\"start\":%.6f,\"end\":%.6f,"
                "\"sent\":%llu,\"received\":%llu,\"retrans\":%llu,\"cwnd\":%u",
                f.group, f.stream, start, t, (unsigned long long)(f.sent - f.i_sent),
                (unsigned long long)(rx - f.i_rx), (unsigned long long)(f.retrans - f.i_retrans),
                f.cwnd);
    if (f.srtt_ms >= 0) std::printf(",\"srtt_ms\":%.4f", f.srtt_ms);
    std::printf("}\n");
    f.i_sent = f.sent;
    f.i_rx = rx;
    f.i_retrans = f.retrans;
  }
  if (t + 1e-9 < end) {
    double next = std::min(length, end - t);
    Simulator::Schedule(Seconds(next), &Interval, t, next, end);
  }
}

// The links between the nodes, each direction's rate, queue and loss, no
// qdisc in front (the emulator has one drop-tail queue per direction), and
// routes by shortest path.
static void BuildLinks(const std::vector<Hop> &hops) {
  InternetStackHelper stack;
  stack.Install(nodes);
  Ipv4AddressHelper addr;
  for (uint32_t i = 0; i < hops.size(); i++) {
    const Hop &h = hops[i];
    PointToPointHelper p2p;
    p2p.SetChannelAttribute("Delay", TimeValue(Seconds(h.delay_s)));
    p2p.SetDeviceAttribute("Mtu", UintegerValue(h.mtu));
    NetDeviceContainer d = p2p.Install(nodes.Get(h.a), nodes.Get(h.b));
    double rates[2] = {h.rate_ab, h.rate_ba};
    uint32_t queues[2] = {h.queue_ab, h.queue_ba};
    double lossOf[2] = {h.loss_ab, h.loss_ba};
    Link link;
    link.channel = DynamicCast<PointToPointChannel>(d.Get(0)->GetChannel());
    for (int k = 0; k < 2; k++) {
      auto dev = DynamicCast<PointToPointNetDevice>(d.Get(k));
      link.dev[k] = dev;
      dev->SetDataRate(RateOf(rates[k]));
      dev->GetQueue()->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, queues[k]));
      // What device k sends is lost on receipt at the other end.
      Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
      em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
      em->SetAttribute("ErrorRate", DoubleValue(lossOf[k]));
      DynamicCast<PointToPointNetDevice>(d.Get(1 - k))->SetReceiveErrorModel(em);
      link.loss[k] = em;
    }
    links.push_back(link);
    std::ostringstream net;
    net << "10." << (i / 250) << "." << (i % 250) << ".0";
    addr.SetBase(net.str().c_str(), "255.255.255.0");
    addr.Assign(d);
    TrafficControlHelper tch;
    tch.Uninstall(d);
  }
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();
}

// Just before group g's sockets are made: its TCP options become the
// defaults and its congestion control the sending node's.
static void ConfigureGroup(uint32_t g) {
  const Group &grp = groups[g];
  std::string cc = grp.cc;
  cwndClamp = grp.clamp;
  if (grp.clamp > 0) {
    clampedInner = TypeId::LookupByName(cc);
    cc = "ns3::LinkperfClampedCongestion";
  }
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(grp.segment));
  // Linux: the initial window is 10 segments, at most the clamp.
  uint32_t initialCwnd = grp.clamp > 0 ? std::min(10u, grp.clamp) : 10u;
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initialCwnd));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(grp.rcvbuf));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(grp.sndbuf));
  nodes.Get(grp.src)->GetObject<TcpL4Protocol>()->SetAttribute(
      "SocketType", TypeIdValue(TypeId::LookupByName(cc)));
}

// Group g's flows: configured at 2g ns, started at 2g + 1 ns (a socket takes
// the defaults in force when its application starts), sending until stop_s.
static void InstallGroup(uint32_t g) {
  const Group &grp = groups[g];
  Simulator::Schedule(NanoSeconds(2 * g), &ConfigureGroup, g);
  Time start = NanoSeconds(2 * g + 1);
  Ipv4Address to = nodes.Get(grp.dst)->GetObject<Ipv4>()->GetAddress(1, 0).GetLocal();
  for (uint32_t k = 0; k < grp.streams; k++) {
    uint32_t i = flows.size();
    uint16_t port = 5201 + i;
    BulkSendHelper send("ns3::TcpSocketFactory", InetSocketAddress(to, port));
    send.SetAttribute("MaxBytes", UintegerValue(0));
    send.SetAttribute("SendSize", UintegerValue(128 * 1024));
    ApplicationContainer a = send.Install(nodes.Get(grp.src));
    a.Start(start);
    a.Stop(Seconds(grp.stop_s));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer s = sink.Install(nodes.Get(grp.dst));
    s.Start(start);
    FlowState f;
    f.group = g;
    f.stream = k;
    f.stop_s = grp.stop_s;
    f.app = DynamicCast<BulkSendApplication>(a.Get(0));
    f.sink = DynamicCast<PacketSink>(s.Get(0));
    flows.push_back(f);
    Simulator::Schedule(start + NanoSeconds(1), &Connect, i);
  }
}

int main(int argc, char *argv[]) {
  std::string linkSpec, groupSpec, stepSpec;
  uint32_t nodeCount = 2;
  double duration = 10, interval = 1, sample = 0.01;
  uint32_t seed = 1;
  CommandLine cmd;
  cmd.AddValue("nodes", "nodes", nodeCount);
  cmd.AddValue("links", "links between nodes", linkSpec);
  cmd.AddValue("flows", "flow groups", groupSpec);
  cmd.AddValue("steps", "schedule steps", stepSpec);
  cmd.AddValue("duration", "seconds simulated", duration);
  cmd.AddValue("interval", "interval report period, s", interval);
  cmd.AddValue("sample", "sample period, s (0: none)", sample);
  cmd.AddValue("seed", "RNG run number", seed);
  cmd.Parse(argc, argv);
  RngSeedManager::SetRun(seed);

  auto hops = ParseLinks(linkSpec, nodeCount);
  groups = ParseGroups(groupSpec, nodeCount);
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
  Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
  nodes.Create(nodeCount);
  BuildLinks(hops);
  for (const Step &st : ParseSteps(stepSpec)) {
    if (st.hop >= links.size() || st.side > 1) {
      std::fprintf(stderr, "step on link %u side %u: no such link\n", st.hop, st.side);
      return 2;
    }
    Simulator::Schedule(Seconds(st.at_s), &ApplyLink, st.hop, st.side, st.rate, st.queue,
                        st.delay_s);
    Simulator::Schedule(Seconds(st.loss_at_s), &ApplyLoss, st.hop, st.side, st.loss);
  }
  for (uint32_t g = 0; g < groups.size(); g++) InstallGroup(g);
  if (sample > 0) Simulator::Schedule(Seconds(sample), &Sample, sample, duration);
  Simulator::Schedule(Seconds(std::min(interval, duration)), &Interval, 0.0,
                      std::min(interval, duration), duration);
  Simulator::Stop(Seconds(duration) + NanoSeconds(2 * groups.size() + 2));
  Simulator::Run();
  for (const FlowState &f : flows) {
    std::printf("{\"type\":\"end\",\"group\":%u,\"flow\":%u,\"sent\":%llu,\"received\":%llu,"
                "\"retrans\":%llu}\n",
                f.group, f.stream, (unsigned long long)f.sent,
                (unsigned long long)f.sink->GetTotalRx(), (unsigned long long)f.retrans);
  }
  Simulator::Destroy();
  return 0;
}
