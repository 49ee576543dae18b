package rail0test

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseFault reads a fault from its one-line form.
// rail0-gateway's -fault flag and the control surface take that form. It
// is comma-separated key=value pairs, for example:
//
//	path=/payments/*/capture,status=502,every=2
//	route=POST /payments,kind=drop,when=after,times=1
//	method=GET,path=/tokens,kind=stall,delay=2s,p=0.5
//	path=/health,status=503,retry_after=7,content_type=text/html,body=<h1>down</h1>
//
// Which requests match; absent keys match everything:
//   - method: e.g. POST.
//   - route: a route pattern as Ledger names it, e.g.
//     "POST /payments/{id}/{operation}".
//   - path: a path.Match glob on the URL path.
//
// How often:
//   - every=N: every N-th matching request.
//   - p=F: probability in (0, 1].
//   - times=N: retire after N hits; unlimited by default.
//
// What happens:
//   - kind: status, drop, stall, truncate or gzip_lie, or a FaultKind name
//     such as status_after. status is the default when status= is given.
//   - when=before: the handler never runs.
//   - when=after: the handler runs, then the response is replaced or broken.
//   - status=CODE: 200-599, 503 by default.
//   - retry_after=VALUE: sent verbatim.
//   - content_type=TYPE.
//   - delay=DURATION: for a stall.
//   - body=TEXT: must come last and runs to the end of the line, commas
//     included.
//
// Whitespace around keys and values is ignored.
func ParseFault(spec string) (Fault, error) {
	var f Fault
	var kind, when string
	rest := strings.TrimSpace(spec)
	if rest == "" {
		return Fault{}, fmt.Errorf("rail0test: empty fault")
	}
	seen := map[string]bool{}
	for rest != "" {
		var item string
		key, _, _ := strings.Cut(rest, "=")
		if strings.TrimSpace(key) == "body" {
			item, rest = rest, ""
		} else {
			item, rest, _ = strings.Cut(rest, ",")
		}
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return Fault{}, fmt.Errorf("rail0test: fault item %q is not key=value", strings.TrimSpace(item))
		}
		if seen[k] {
			return Fault{}, fmt.Errorf("rail0test: fault key %q given twice", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "method":
			f.Method = strings.ToUpper(v)
		case "route":
			f.Route = v
		case "path":
			f.Path = v
		case "kind":
			kind = v
		case "when":
			if v != "before" && v != "after" {
				return Fault{}, fmt.Errorf("rail0test: fault when=%q: want before or after", v)
			}
			when = v
		case "status":
			f.Status, err = strconv.Atoi(v)
			if err != nil || f.Status < 200 || f.Status > 599 {
				return Fault{}, fmt.Errorf("rail0test: fault status=%q: want a status code from 200 to 599", v)
			}
		case "every":
			f.Every, err = strconv.Atoi(v)
			if err != nil || f.Every < 1 {
				return Fault{}, fmt.Errorf("rail0test: fault every=%q: want a positive integer", v)
			}
		case "times":
			f.Times, err = strconv.Atoi(v)
			if err != nil || f.Times < 1 {
				return Fault{}, fmt.Errorf("rail0test: fault times=%q: want a positive integer", v)
			}
		case "p":
			f.Rate, err = strconv.ParseFloat(v, 64)
			if err != nil || !(f.Rate > 0 && f.Rate <= 1) {
				return Fault{}, fmt.Errorf("rail0test: fault p=%q: want a probability in (0, 1]", v)
			}
		case "delay":
			f.Delay, err = time.ParseDuration(v)
			if err != nil || f.Delay < 0 {
				return Fault{}, fmt.Errorf("rail0test: fault delay=%q: want a duration such as 2s", v)
			}
		case "retry_after":
			f.RetryAfter = v
		case "content_type":
			f.ContentType = v
		case "body":
			f.Body = v
		default:
			return Fault{}, fmt.Errorf("rail0test: unknown fault key %q", k)
		}
	}
	if seen["p"] && seen["every"] {
		return Fault{}, fmt.Errorf("rail0test: a fault takes p or every, not both")
	}
	if kind == "" {
		kind = "status"
		if !seen["status"] {
			return Fault{}, fmt.Errorf("rail0test: a fault needs kind= or status=")
		}
	}
	var err error
	if f.Kind, err = faultKind(kind, when); err != nil {
		return Fault{}, err
	}
	if f.Kind == FaultStall && !seen["delay"] {
		return Fault{}, fmt.Errorf("rail0test: a stall fault needs delay=")
	}
	if seen["status"] && f.Kind != FaultStatus && f.Kind != FaultStatusAfter {
		return Fault{}, fmt.Errorf("rail0test: status= applies to kind=status only, not %s", f.Kind)
	}
	return f, nil
}

// faultKind resolves a kind and a when= into a FaultKind.
func faultKind(kind, when string) (FaultKind, error) {
	pick := func(before, after FaultKind) (FaultKind, error) {
		if when == "after" {
			return after, nil
		}
		return before, nil
	}
	only := func(k FaultKind, allowed string) (FaultKind, error) {
		if when != "" && when != allowed {
			return 0, fmt.Errorf("rail0test: kind=%s happens %s the handler only", kind, allowed)
		}
		return k, nil
	}
	switch kind {
	case "status":
		return pick(FaultStatus, FaultStatusAfter)
	case "drop":
		return pick(FaultDropBefore, FaultDropAfter)
	case "stall":
		return only(FaultStall, "before")
	case "truncate":
		return only(FaultTruncate, "after")
	case "gzip_lie":
		return only(FaultGzipLie, "after")
	case "status_after":
		return only(FaultStatusAfter, "after")
	case "drop_before":
		return only(FaultDropBefore, "before")
	case "drop_after":
		return only(FaultDropAfter, "after")
	}
	return 0, fmt.Errorf("rail0test: unknown fault kind %q (want status, drop, stall, truncate or gzip_lie)", kind)
}
