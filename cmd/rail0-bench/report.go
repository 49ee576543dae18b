package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// printTable writes one row per strategy.
func printTable(w io.Writer, results []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tsent\t429s\tearly retries\tmax 429s/window\tfailed calls\tmakespan\tp50\tp99\t")
	var skipped []string
	for _, r := range results {
		if r.skipped != "" {
			skipped = append(skipped, fmt.Sprintf("%s: %s", r.label, r.skipped))
			continue
		}
		s := r.sum
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%v\t%v\t%v\t\n", r.label,
			s.Sent, s.Refused, s.EarlyRetries, s.Max429Window, s.Failed,
			roundMS(s.Makespan), roundLatency(s.P50), roundLatency(s.P99))
	}
	tw.Flush()
	for _, line := range skipped {
		fmt.Fprintln(w, line)
	}
}

// roundMS rounds d to 10 ms for display.
func roundMS(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }

// verdict is one of the targets, checked against one strategy.
type verdict struct {
	label  string
	target string
	got    string
	ok     bool
}

// sdkKeys are the strategies that use this SDK with RetryOn429.
var sdkKeys = map[string]bool{"retry": true, "cooldown": true, "pacing": true, "redis": true}

// checkTargets checks the targets the issue sets: no early retry from the
// SDK; with the cooldown, at most one 429 per worker in any window; with
// pacing, no 429 and a makespan within 10% of the floor.
func checkTargets(results []result, workers int, floor time.Duration) []verdict {
	var vs []verdict
	for _, r := range results {
		if r.skipped != "" || !sdkKeys[r.key] {
			continue
		}
		s := r.sum
		vs = append(vs, verdict{r.label, "early retries = 0", fmt.Sprint(s.EarlyRetries), s.EarlyRetries == 0})
		if r.key == "cooldown" {
			vs = append(vs, verdict{r.label, fmt.Sprintf("429s per window <= %d workers", workers),
				fmt.Sprint(s.Max429Window), s.Max429Window <= workers})
		}
		if r.key == "pacing" || r.key == "redis" {
			vs = append(vs, verdict{r.label, "429s = 0", fmt.Sprint(s.Refused), s.Refused == 0})
			limit := floor + floor/10
			vs = append(vs, verdict{r.label, fmt.Sprintf("makespan <= %v (floor + 10%%)", limit),
				roundMS(s.Makespan).String(), s.Makespan <= limit})
		}
	}
	return vs
}

// printTargets writes the verdicts.
func printTargets(w io.Writer, results []result, o options, floor time.Duration) {
	vs := checkTargets(results, o.workers, floor)
	if len(vs) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntargets:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, v := range vs {
		mark := "ok"
		if !v.ok {
			mark = "MISSED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.label, v.target, v.got, mark)
	}
	tw.Flush()
}

// roundLatency rounds a call latency for display: to 100 µs below 10 ms,
// where the calls that went straight through sit, and to 1 ms above.
func roundLatency(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
