package rail0test

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFault(t *testing.T) {
	for _, c := range []struct {
		spec string
		want Fault
	}{
		{"path=/payments/*/capture,status=502,every=2",
			Fault{Path: "/payments/*/capture", Kind: FaultStatus, Status: 502, Every: 2}},
		{"route=POST /payments,kind=drop,when=after,times=1",
			Fault{Route: "POST /payments", Kind: FaultDropAfter, Times: 1}},
		{" method = get , path=/tokens, kind=stall, delay=2s, p=0.5 ",
			Fault{Method: "GET", Path: "/tokens", Kind: FaultStall, Delay: 2 * time.Second, Rate: 0.5}},
		{"path=/health,status=503,retry_after=7,content_type=text/html,body=<p>a, b=c</p>",
			Fault{Path: "/health", Kind: FaultStatus, Status: 503, RetryAfter: "7", ContentType: "text/html", Body: "<p>a, b=c</p>"}},
		{"status=500,when=after", Fault{Kind: FaultStatusAfter, Status: 500}},
		{"kind=status", Fault{Kind: FaultStatus}},
		{"kind=drop", Fault{Kind: FaultDropBefore}},
		{"kind=truncate,p=1", Fault{Kind: FaultTruncate, Rate: 1}},
		{"kind=gzip_lie,when=after", Fault{Kind: FaultGzipLie}},
		{"kind=drop_after", Fault{Kind: FaultDropAfter}},
		{"kind=status_after,status=504", Fault{Kind: FaultStatusAfter, Status: 504}},
	} {
		got, err := ParseFault(c.spec)
		if err != nil {
			t.Errorf("ParseFault(%q): %v", c.spec, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseFault(%q) = %+v, want %+v", c.spec, got, c.want)
		}
	}
}

func TestParseFaultRefuses(t *testing.T) {
	for _, c := range []struct{ spec, says string }{
		{"", "empty"},
		{"path=/x", "kind= or status="},
		{"status=abc", "status"},
		{"status=99", "status"},
		{"status=600", "status"},
		{"status=502,every=0", "every"},
		{"status=502,times=-1", "times"},
		{"status=502,p=0", "p="},
		{"status=502,p=1.5", "p="},
		{"status=502,p=0.5,every=2", "not both"},
		{"kind=stall", "delay"},
		{"kind=stall,delay=-1s", "delay"},
		{"kind=stall,delay=2s,when=after", "before the handler only"},
		{"kind=truncate,when=before", "after the handler only"},
		{"kind=drop,status=502", "status= applies"},
		{"kind=explode", "unknown fault kind"},
		{"status=502,when=during", "when="},
		{"status=502,colour=red", "unknown fault key"},
		{"status=502,status=503", "twice"},
		{"status=502,oops", "key=value"},
		{"=5", "key=value"},
	} {
		_, err := ParseFault(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseFault(%q) = %v, want an error saying %q", c.spec, err, c.says)
		}
	}
}

func TestFaultEveryNth(t *testing.T) {
	h := newHarness(t, WithFaults(Fault{Path: "/tokens", Kind: FaultStatus, Status: 502, Every: 3}))
	var got []int
	for range 7 {
		res, _ := h.send("GET", "/tokens", "", nil)
		got = append(got, res.status)
	}
	if want := []int{200, 200, 502, 200, 200, 502, 200}; !reflect.DeepEqual(got, want) {
		t.Fatalf("statuses = %v, want %v", got, want)
	}
	// Requests the fault's filters reject do not advance its count.
	expect(t, h.call("GET", "/blockchains", "", nil), 200, "")
	res, _ := h.send("GET", "/tokens", "", nil)
	res2, _ := h.send("GET", "/tokens", "", nil)
	if res.status != 200 || res2.status != 502 {
		t.Fatalf("after another route: %d %d", res.status, res2.status)
	}
}
