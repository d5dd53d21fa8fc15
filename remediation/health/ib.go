package health

import "fmt"

// evaluateIB judges the node's InfiniBand (and RoCE) ports. Linux's sysfs gives a port's
// active rate but not the most it could run at, so a port's expected rate is the highest
// of: the rate of the node's other active ports on adapters of the same model and link
// layer (a node's HCAs are cabled alike), the best rate this port has run at since the
// agent started, and a configured floor. No per-model table is kept by hand.
func evaluateIB(prev *Readings, cur Readings, exp Expectations) []Finding {
	var out []Finding
	node := func(format string, args ...any) {
		out = append(out, Finding{Condition: InfiniBandDegraded, GPU: -1, Action: ActionLinkService, Detail: fmt.Sprintf(format, args...)})
	}
	if exp.IBPorts > 0 && len(cur.IBPorts) < exp.IBPorts {
		node("%d of %d InfiniBand ports present", len(cur.IBPorts), exp.IBPorts)
	}
	hca := map[string]string{}
	for _, d := range cur.IBDevices {
		hca[d.Name] = d.HCAType
		evaluateHCALink(d, node)
	}
	peerBest := map[string]float64{}
	peerKey := func(p IBPort) string { return hca[p.Device] + "|" + p.LinkLayer }
	for _, p := range cur.IBPorts {
		if portUp(p) {
			peerBest[peerKey(p)] = max(peerBest[peerKey(p)], p.RateGbps)
		}
	}
	for _, p := range cur.IBPorts {
		name := p.Name()
		switch {
		case p.State != "ACTIVE":
			node("port %s state %s", name, p.State)
		case p.PhysState != "LinkUp":
			node("port %s physical state %s", name, p.PhysState)
		case exp.IBRateGbps > 0 && p.RateGbps < exp.IBRateGbps:
			node("port %s rate %g Gb/s below %g Gb/s", name, p.RateGbps, exp.IBRateGbps)
		case p.RateGbps < peerBest[peerKey(p)]:
			node("port %s rate %g Gb/s below %g Gb/s of the node's other %s ports", name, p.RateGbps, peerBest[peerKey(p)], hcaName(hca[p.Device]))
		case p.RateGbps < exp.IBPortRates[name]:
			node("port %s rate %g Gb/s below the %g Gb/s it ran at", name, p.RateGbps, exp.IBPortRates[name])
		}
		evaluateCounters(previousPort(prev, name), p, exp.IBSymbolErrors, node)
	}
	return out
}

func portUp(p IBPort) bool { return p.State == "ACTIVE" && p.PhysState == "LinkUp" }

func hcaName(t string) string {
	if t == "" {
		return "InfiniBand"
	}
	return t
}

// evaluateHCALink: an adapter whose PCIe link trained narrower or slower than it can
// cannot feed its ports at their rate, however healthy the cable.
func evaluateHCALink(d IBDevice, node func(string, ...any)) {
	l := d.PCIe
	if l.MaxWidth > 0 && l.Width > 0 && l.Width < l.MaxWidth {
		node("HCA %s PCIe width x%d below x%d", d.Name, l.Width, l.MaxWidth)
	}
	if l.MaxSpeedGTs > 0 && l.SpeedGTs > 0 && l.SpeedGTs < l.MaxSpeedGTs {
		node("HCA %s PCIe %g GT/s below %g GT/s", d.Name, l.SpeedGTs, l.MaxSpeedGTs)
	}
}

// evaluateCounters compares a port's error counters with the previous poll: any link
// retrain, or more symbol errors than allowed, means a failing link.
func evaluateCounters(prev *IBPort, p IBPort, symbolBudget uint64, node func(string, ...any)) {
	if prev == nil || prev.Counters == nil || p.Counters == nil {
		return
	}
	was, now := *prev.Counters, *p.Counters
	if now.LinkDowned > was.LinkDowned {
		node("port %s link went down %d times since the last poll", p.Name(), now.LinkDowned-was.LinkDowned)
	}
	if now.SymbolErrors > was.SymbolErrors && now.SymbolErrors-was.SymbolErrors > symbolBudget {
		node("port %s gained %d symbol errors since the last poll (more than %d)", p.Name(), now.SymbolErrors-was.SymbolErrors, symbolBudget)
	}
}

func previousPort(prev *Readings, name string) *IBPort {
	if prev == nil {
		return nil
	}
	for i := range prev.IBPorts {
		if prev.IBPorts[i].Name() == name {
			return &prev.IBPorts[i]
		}
	}
	return nil
}
