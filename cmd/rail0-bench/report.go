package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// printTable writes one row per run: W, strategy and the summary.
func printTable(w io.Writer, results []result, floor time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "W\tstrategy\tsent\t429s\t429s after 1st window\tearly retries\tearly after 1st\tfailed\tmakespan\t÷ floor\tp50\tp99\tRedis trips/call\t")
	var skipped []string
	for _, r := range results {
		if r.skipped != "" {
			skipped = append(skipped, fmt.Sprintf("W=%d %s: %s", r.workers, r.label, r.skipped))
			continue
		}
		s := r.sum
		trips := ""
		if s.RoundTrips > 0 {
			trips = fmt.Sprintf("%.2f", s.RoundTrips)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%.3f\t%v\t%v\t%s\t\n", r.workers, r.label,
			s.Sent, s.Refused, s.RefusedAfter, s.EarlyRetries, s.EarlyAfter, s.Failed,
			roundMS(s.Makespan), ratio(s.Makespan, floor), roundLatency(s.P50), roundLatency(s.P99), trips)
	}
	tw.Flush()
	for _, line := range skipped {
		fmt.Fprintln(w, line)
	}
}

// ratio is d ÷ floor, or 0 without a floor.
func ratio(d, floor time.Duration) float64 {
	if floor <= 0 {
		return 0
	}
	return float64(d) / float64(floor)
}

// roundMS rounds d to 10 ms for display.
func roundMS(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

// verdict is one of the targets, checked against one run.
type verdict struct {
	label  string
	target string
	got    string
	ok     bool
}

// floorSlack is the makespan target: at most 1% over the floor.
const floorSlack = 1.01

// checkTargets checks the targets. With only RetryOn429 (sdk): at
// most W 429s, none after the first window, makespan ≤ 1.01 × floor, p99 no
// worse than go-retryablehttp's on the same gateway and W, and, against the
// short Retry-After gateway, no early retry after the first window. With
// pacing, alone or through Redis: no 429 and makespan ≤ 1.01 × floor; through
// Redis, at most one round trip per call.
func checkTargets(results []result, floor time.Duration) []verdict {
	base := map[string]result{}
	for _, r := range results {
		if r.key == "retryablehttp" && r.skipped == "" {
			base[fmt.Sprint(r.gateway, r.workers)] = r
		}
	}
	var vs []verdict
	for _, r := range results {
		if r.skipped != "" {
			continue
		}
		s := r.sum
		label := fmt.Sprintf("%s W=%d %s", r.gateway, r.workers, r.label)
		add := func(target, got string, ok bool) { vs = append(vs, verdict{label, target, got, ok}) }
		makespan := func() {
			add(fmt.Sprintf("makespan <= %.2f x floor", floorSlack), fmt.Sprintf("%.3f", ratio(s.Makespan, floor)),
				ratio(s.Makespan, floor) <= floorSlack)
		}
		switch r.key {
		case "sdk":
			if r.gateway == "short" {
				add("early retries after 1st window = 0", fmt.Sprint(s.EarlyAfter), s.EarlyAfter == 0)
				continue
			}
			add(fmt.Sprintf("429s <= W = %d", r.workers), fmt.Sprint(s.Refused), s.Refused <= r.workers)
			add("429s after 1st window = 0", fmt.Sprint(s.RefusedAfter), s.RefusedAfter == 0)
			makespan()
			if b, ok := base[fmt.Sprint(r.gateway, r.workers)]; ok {
				add(fmt.Sprintf("p99 <= retryablehttp's %v", roundLatency(b.sum.P99)), roundLatency(s.P99).String(), s.P99 <= b.sum.P99)
			}
		case "pacing", "redis":
			add("429s = 0", fmt.Sprint(s.Refused), s.Refused == 0)
			makespan()
			if r.key == "redis" {
				add("Redis round trips per call <= 1", fmt.Sprintf("%.2f", s.RoundTrips), s.RoundTrips <= 1)
			}
		}
	}
	return vs
}

// printTargets writes the verdicts and how many were met.
func printTargets(w io.Writer, results []result, floor time.Duration) {
	vs := checkTargets(results, floor)
	if len(vs) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntargets:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	met := 0
	for _, v := range vs {
		mark := "ok"
		if v.ok {
			met++
		} else {
			mark = "MISSED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.label, v.target, v.got, mark)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d targets met\n", met, len(vs))
}

// roundLatency rounds a call latency for display: to 100 µs below 10 ms,
// where the calls that went straight through sit, and to 1 ms above.
func roundLatency(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
