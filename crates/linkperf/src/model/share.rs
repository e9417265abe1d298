//! Max-min fair shares of flows that run at once: each flow has its own
//! bound (window, offered rate, loss response) and uses resources along its
//! path (a line, an ATM VC's peak cell rate, a router's processor), each
//! serving so many units per second, each payload bit taking some of them.
//! Progressive filling: every flow not yet limited grows at the same rate
//! until a resource is full (its flows stop there, sharing it) or a flow
//! reaches its own bound; flows limited elsewhere leave their room to the
//! rest. Pure: [`super::testbed::host_uses`] lists a testbed path's uses.

/// One flow: its own bound in payload bit/s (infinite when only the path
/// bounds it) and the (resource, capacity per second, units per payload
/// bit) it uses.
#[derive(Debug, Clone)]
pub struct Demand<K> {
    pub own: f64,
    pub uses: Vec<(K, f64, f64)>,
}

/// What limits a flow's share.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit<K> {
    /// Its own bound.
    Own,
    /// A resource it filled, and how many flows use that resource.
    Resource(K, usize),
    /// Nothing: no bound and no resource with a capacity.
    Unbounded,
}

/// A resource's capacity and its users: (demand index, units per payload bit).
type Users = (f64, Vec<(usize, f64)>);

/// Each demand's max-min fair rate (payload bit/s) and what limits it, in order.
pub fn max_min<K: Ord + Clone>(demands: &[Demand<K>]) -> Vec<(f64, Limit<K>)> {
    use std::collections::BTreeMap;
    // Per resource: its capacity (the smallest any flow states) and users.
    let mut resources: BTreeMap<&K, Users> = BTreeMap::new();
    for (i, d) in demands.iter().enumerate() {
        for (k, capacity, per_bit) in &d.uses {
            let r = resources.entry(k).or_insert((f64::INFINITY, Vec::new()));
            r.0 = r.0.min(*capacity);
            r.1.push((i, *per_bit));
        }
    }
    let mut rate = vec![0.0f64; demands.len()];
    let mut limit: Vec<Option<Limit<K>>> = vec![None; demands.len()];
    while limit.iter().any(Option::is_none) {
        let active = |i: usize, limit: &[Option<Limit<K>>]| limit[i].is_none();
        // How far every active flow can grow before something fills.
        let mut step = f64::INFINITY;
        for (i, d) in demands.iter().enumerate() {
            if active(i, &limit) {
                step = step.min(d.own - rate[i]);
            }
        }
        for (capacity, users) in resources.values() {
            let load: f64 = users.iter().map(|&(i, u)| u * rate[i]).sum();
            let growth: f64 = (users.iter())
                .filter(|&&(i, _)| active(i, &limit))
                .map(|&(_, u)| u)
                .sum();
            if growth > 0.0 {
                step = step.min((capacity - load) / growth);
            }
        }
        if !step.is_finite() {
            for l in limit.iter_mut().filter(|l| l.is_none()) {
                *l = Some(Limit::Unbounded);
            }
            break;
        }
        let step = step.max(0.0);
        for (r, l) in rate.iter_mut().zip(&limit) {
            if l.is_none() {
                *r += step;
            }
        }
        let full = |c: f64, x: f64| c.is_finite() && c - x <= 1e-9 * c.abs().max(1e-12);
        for (k, (capacity, users)) in &resources {
            let load: f64 = users.iter().map(|&(i, u)| u * rate[i]).sum();
            if full(*capacity, load) {
                for &(i, _) in users {
                    if limit[i].is_none() {
                        limit[i] = Some(Limit::Resource((*k).clone(), users.len()));
                    }
                }
            }
        }
        for (i, d) in demands.iter().enumerate() {
            if limit[i].is_none() && full(d.own, rate[i]) {
                limit[i] = Some(Limit::Own);
            }
        }
    }
    rate.into_iter()
        .zip(limit)
        .map(|(r, l)| (r, l.unwrap_or(Limit::Unbounded)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(own: f64, uses: &[(&'static str, f64, f64)]) -> Demand<&'static str> {
        Demand {
            own,
            uses: uses.to_vec(),
        }
    }

    #[test]
    fn a_shared_line_splits_evenly_and_a_flow_bound_lower_leaves_its_room() {
        // Three flows on a 30-unit line, one bound at 4 by itself: 4, 13, 13.
        let d = [
            demand(4.0, &[("line", 30.0, 1.0)]),
            demand(f64::INFINITY, &[("line", 30.0, 1.0)]),
            demand(100.0, &[("line", 30.0, 1.0)]),
        ];
        let s = max_min(&d);
        assert_eq!(s[0], (4.0, Limit::Own));
        for x in &s[1..] {
            assert!((x.0 - 13.0).abs() < 1e-9, "{s:?}");
            assert_eq!(x.1, Limit::Resource("line", 3));
        }
    }

    #[test]
    fn each_flow_stops_at_its_own_narrowest_resource() {
        // A: its own VC of 8 and the shared 30; B: only the shared 30 (and a
        // framing that takes 1.5 units per bit): A 8, B (30 - 8) / 1.5.
        let d = [
            demand(f64::INFINITY, &[("vc-a", 8.0, 1.0), ("shared", 30.0, 1.0)]),
            demand(f64::INFINITY, &[("shared", 30.0, 1.5)]),
        ];
        let s = max_min(&d);
        assert_eq!(s[0], (8.0, Limit::Resource("vc-a", 1)));
        assert!((s[1].0 - 22.0 / 1.5).abs() < 1e-9, "{s:?}");
        assert_eq!(s[1].1, Limit::Resource("shared", 2));
        // No bound at all.
        assert_eq!(
            max_min(&[demand(f64::INFINITY, &[])]),
            vec![(0.0, Limit::Unbounded)]
        );
    }
}
