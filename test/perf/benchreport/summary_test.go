package benchreport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const smallWorkload = "500Nodes_2000Pods"

// small is the scale of smallWorkload.
var small = Scale{Name: "small", Workload: smallWorkload}

// verdict is a summary row that judges something: a target met or missed, or no data.
type verdict struct {
	Measurement string
	Status      Status
}

func TestSummaryVerdicts(t *testing.T) {
	p := func(testCase string) string { return perfName(testCase, smallWorkload) }
	outage := func(prefix string) string { return perfName("RegistryOutage_ArchFilter", prefix+smallWorkload) }
	tput := func(testCase string, v, bind, created float64) string {
		return result(p(testCase), v, throughput, bind, bindRate, created, createRate)
	}
	coldRun := func(extraAttempts, heldPods int) string {
		return result(p("ColdCache_ArchFilter"), 12.5, allBound, extraAttempts, extra, heldPods, held)
	}
	upstream := func(testCase, workload string, v float64) string {
		return result(perfName(testCase, workload), v, throughput)
	}
	zeroAllocs := func(name string, allocs int) string {
		return result(name, 100, "ns/op", 8*allocs, "B/op", allocs, "allocs/op")
	}
	const (
		mixed  = "Throughput: mixed nodes, multi-arch pods"
		s390x  = "Throughput: s390x-only pods"
		cold   = "Cold cache: 1 000 distinct images, registry +20 ms"
		out    = "Registry outage, half the pods cached"
		micros = "Micro-benchmarks (per call, median)"

		upstreamSection = "No regression: upstream scheduler_perf workloads, ArchFilter in the profile / not"

		affinity      = "Throughput: mixed nodes, multi-arch pods, against hand-written affinity"
		affinityRatio = "ratio ArchFilter / nodeAffinity"
		speedUp       = "speed-up ArchFilter / nodeAffinity"
		heldCycles    = "scheduling cycles spent on held pods (attempts beyond one per pod)"
		down          = "cached half, registry down (503): throughput ratio to healthy"
		slow          = "cached half, registry slow (2 s per request): throughput ratio to healthy"
	)
	zeroAllocTargets := map[string]bool{
		"ArchFilter Filter, node accepted":        true,
		"resolver Lookup, warm, anonymous":        true,
		"resolver Lookup, warm, with credentials": true,
	}
	cacheMemory := func(kind string, perImage float64) string {
		return result("BenchmarkCacheMemory/"+kind, 1e6, "ns/op", perImage, "B/image", perImage/2, "B/entry")
	}
	const (
		memTag    = "resolver cache memory, image by tag"
		memDigest = "resolver cache memory, image by digest"
	)
	tests := []struct {
		name    string
		lines   []string
		section string
		want    []verdict
		// wantNotes are parts of the notes the section's missed rows carry.
		wantNotes []string
		// memory judges the cache memory rows instead of the allocation targets.
		memory bool
	}{
		{
			name:    "multi-arch pods without affinity as fast as with it: met",
			lines:   []string{tput("MixedArch_NodeAffinity", 380, 400, 900), tput("MixedArch_ArchFilter", 381, 400, 900)},
			section: affinity,
			want:    []verdict{{affinityRatio, Met}},
		},
		{
			name:      "images of every architecture slower with ArchFilter on: missed",
			lines:     []string{tput("Everywhere_Default", 400, 420, 900), tput("Everywhere_ArchFilter", 380, 400, 900)},
			section:   "Throughput: mixed nodes, images of every node architecture",
			want:      []verdict{{"ratio ArchFilter / default: the cost of turning it on", Missed}},
			wantNotes: []string{"ratio 0.95 against a target of 0.98"},
		},
		{
			name:    "multi-arch throughput against the default's: for reference, no verdict",
			lines:   []string{tput("MixedArch_Default", 400, 420, 900), tput("MixedArch_ArchFilter", 320, 330, 900)},
			section: mixed,
			want:    nil,
		},
		{
			name: "multi-arch throughput below hand-written affinity's: missed, with the spread",
			lines: []string{tput("MixedArch_NodeAffinity", 390, 420, 900), tput("MixedArch_NodeAffinity", 410, 420, 900),
				tput("MixedArch_ArchFilter", 320, 330, 900)},
			section: affinity,
			want:    []verdict{{affinityRatio, Missed}},
			wantNotes: []string{
				"ratio 0.80 against a target of 1.00. ",
				"`MixedArch_NodeAffinity/500Nodes_2000Pods` ranged 390–410 pods/s over 2 runs (±2 % around its median)",
			},
		},
		{
			name:      "missed while pods were bound as fast as they were created: the note says so",
			lines:     []string{tput("MixedArch_NodeAffinity", 400, 420, 900), tput("MixedArch_ArchFilter", 300, 300, 310)},
			section:   affinity,
			want:      []verdict{{affinityRatio, Missed}},
			wantNotes: []string{"in `MixedArch_ArchFilter/500Nodes_2000Pods` pods were bound at 300 pods/s while they were created at 310 pods/s"},
		},
		{
			name:    "ArchFilter's workload has no result: no data",
			lines:   []string{tput("MixedArch_NodeAffinity", 400, 420, 900)},
			section: affinity,
			want:    []verdict{{"default + ArchFilter (warm cache), pods without affinity", NoData}, {affinityRatio, NoData}},
		},
		{
			name:    "the base's throughput is zero: no data rather than a division by zero",
			lines:   []string{tput("MixedArch_NodeAffinity", 0, 0, 900), tput("MixedArch_ArchFilter", 300, 300, 900)},
			section: affinity,
			want:    []verdict{{affinityRatio, NoData}},
		},
		{
			name:    "s390x-only pods 4.4× faster than with nodeAffinity: met",
			lines:   []string{tput("S390xOnly_NodeAffinity", 100, 100, 900), tput("S390xOnly_ArchFilter", 440, 440, 900)},
			section: s390x,
			want:    []verdict{{speedUp, Met}},
		},
		{
			name:      "s390x-only pods only 3.5× faster: missed",
			lines:     []string{tput("S390xOnly_NodeAffinity", 100, 100, 900), tput("S390xOnly_ArchFilter", 350, 350, 900)},
			section:   s390x,
			want:      []verdict{{speedUp, Missed}},
			wantNotes: []string{"ratio 3.50 against a target of 4.00."},
		},
		{
			name: "upstream workloads: one row per test case and workload found; a missing case has no data",
			lines: []string{
				upstream("Upstream_SchedulingBasic_Default", "500Nodes", 400), upstream("Upstream_SchedulingBasic_ArchFilter", "500Nodes", 392),
				upstream("Upstream_SchedulingNodeAffinity_Default", "500Nodes", 400), upstream("Upstream_SchedulingNodeAffinity_ArchFilter", "500Nodes", 360),
				upstream("Upstream_SchedulingPodAffinity_Default", "500Nodes", 100), upstream("Upstream_SchedulingPodAffinity_ArchFilter", "500Nodes", 101),
				upstream("Upstream_PreemptionBasic_Default", "1000Nodes", 50), upstream("Upstream_PreemptionBasic_ArchFilter", "1000Nodes", 49),
			},
			section: upstreamSection,
			want: []verdict{
				{"SchedulingBasic (500Nodes)", Met},
				{"SchedulingNodeAffinity (500Nodes)", Missed},
				{"SchedulingPodAffinity (500Nodes)", Met},
				{"TopologySpreading", NoData},
				{"PreemptionBasic (1000Nodes)", Met},
			},
			wantNotes: []string{"ratio 0.90 against a target of 0.95."},
		},
		{
			name:    "cold cache: pods held, no attempt beyond one per pod: met",
			lines:   []string{coldRun(0, 1000)},
			section: cold,
			want:    []verdict{{heldCycles, Met}},
		},
		{
			name:      "cold cache: held pods attempted: missed",
			lines:     []string{coldRun(0, 1000), coldRun(4, 1000)},
			section:   cold,
			want:      []verdict{{heldCycles, Missed}},
			wantNotes: []string{"counted more attempts than pods"},
		},
		{
			name:    "cold cache: no pod held, so no attempt proves nothing: missed",
			lines:   []string{coldRun(0, 0)},
			section: cold,
			want:    []verdict{{heldCycles, Missed}},
		},
		{
			name:    "cold cache without the observer's counts: no data",
			lines:   []string{result(p("ColdCache_ArchFilter"), 12.5, allBound)},
			section: cold,
			want:    []verdict{{heldCycles, NoData}},
		},
		{
			name:    "cold cache workload missing: no data",
			lines:   []string{tput("MixedArch_Default", 400, 420, 900)},
			section: cold,
			want:    []verdict{{"ColdCache_ArchFilter", NoData}},
		},
		{
			name: "outage: the cached half bound as fast as with a healthy registry: met",
			lines: []string{
				result(outage("Healthy_"), 10, allBound, 150, throughput, 0, extra, 500, held),
				result(outage("Down_"), 9.8, allBound, 200, throughput, 0, extra, 500, held, 1000, failOpen),
				result(outage("Slow2s_"), 10.5, allBound, 190, throughput, 0, extra, 1000, held, 900, timeouts),
			},
			section: out,
			want:    []verdict{{down, Met}, {slow, Met}, {heldCycles, Met}},
		},
		{
			name: "outage: the cached half slowed down by the other's registry: missed",
			lines: []string{
				result(outage("Healthy_"), 10, allBound, 150, throughput, 0, extra, 500, held),
				result(outage("Down_"), 20, allBound, 100, throughput, 0, extra, 500, held),
				result(outage("Slow2s_"), 10, allBound, 190, throughput, 3, extra, 1000, held),
			},
			section:   out,
			want:      []verdict{{down, Missed}, {slow, Met}, {heldCycles, Missed}},
			wantNotes: []string{"ratio 0.50 against a target of 0.95: the cached half took 20.00 s to be bound, against 10.00 s", "counted more attempts than pods"},
		},
		{
			name: "outage: a run missing: no data for it",
			lines: []string{
				result(outage("Healthy_"), 10, allBound, 150, throughput, 0, extra, 500, held),
				result(outage("Down_"), 10, allBound, 150, throughput, 0, extra, 500, held),
			},
			section: out,
			want:    []verdict{{down, Met}, {slow, NoData}, {heldCycles, Met}},
		},
		{
			name:    "outage: no healthy run to compare with: no data",
			lines:   []string{result(outage("Down_"), 10, allBound, 150, throughput)},
			section: out,
			want:    []verdict{{"RegistryOutage_ArchFilter", NoData}},
		},
		{
			name: "micro-benchmarks: the hot paths allocate nothing: met",
			lines: []string{zeroAllocs("BenchmarkFilter/accept", 0), zeroAllocs("BenchmarkFilter/reject", 2),
				zeroAllocs("BenchmarkLookupWarm", 0), zeroAllocs("BenchmarkLookupWarmWithCredentials", 0)},
			section: micros,
			want: []verdict{
				{"ArchFilter Filter, node accepted", Met},
				{"resolver Lookup, warm, anonymous", Met},
				{"resolver Lookup, warm, with credentials", Met},
			},
		},
		{
			name: "micro-benchmarks: Filter allocates, a Lookup benchmark is missing",
			lines: []string{zeroAllocs("BenchmarkFilter/accept", 1), zeroAllocs("BenchmarkFilter/reject", 2),
				zeroAllocs("BenchmarkLookupWarm", 0)},
			section: micros,
			want: []verdict{
				{"ArchFilter Filter, node accepted", Missed},
				{"resolver Lookup, warm, anonymous", Met},
				{"resolver Lookup, warm, with credentials", NoData},
			},
			wantNotes: []string{"BenchmarkFilter/accept allocates: the hot path is supposed to read memory only."},
		},
		{
			name:    "cache memory: within 512 B per image: met",
			lines:   []string{cacheMemory("tag", 512), cacheMemory("digest", 440)},
			section: micros, memory: true,
			want: []verdict{{memTag, Met}, {memDigest, Met}},
		},
		{
			name:    "cache memory: over 512 B by tag: missed, with what it keeps alive",
			lines:   []string{cacheMemory("tag", 759), cacheMemory("digest", 440)},
			section: micros, memory: true,
			want:      []verdict{{memTag, Missed}, {memDigest, Met}},
			wantNotes: []string{"759 B per image by tag against a target of 512 B. What an image keeps alive"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []verdict
			var notes []string
			for _, row := range Summary([]*Run{{ID: "A", Scale: small, Results: parse(t, tc.lines...)}}) {
				if row.Section != tc.section {
					continue
				}
				// The lines leave out most micro-benchmarks on purpose: judge the
				// ones with a target only.
				judged := zeroAllocTargets[row.Measurement]
				if tc.memory {
					judged = row.Measurement == memTag || row.Measurement == memDigest
				}
				if row.Status == NoCheck || (tc.section == micros && !judged) {
					continue
				}
				got = append(got, verdict{row.Measurement, row.Status})
				if row.Note != "" {
					if row.Status != Missed {
						t.Errorf("row %q is %s but has a note: %s", row.Measurement, row.Status, row.Note)
					}
					notes = append(notes, row.Note)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts of %q (-want,+got):\n%s", tc.section, diff)
			}
			checkNotes(t, notes, tc.wantNotes)
		})
	}
}

// TestBindRateNote: a throughput ratio missed on the sample average but met on the
// bind rates says so, with the rounds and the samples' swing; one missed on both
// says nothing more.
func TestBindRateNote(t *testing.T) {
	b, s := perfName("Upstream_PreemptionBasic_Default", "1000Nodes"), perfName("Upstream_PreemptionBasic_ArchFilter", "1000Nodes")
	r := parse(t,
		result(b, 2.4, "SchedulingThroughput/Average", 40.2, "measured-pods/s"),
		result(b, 27.4, "SchedulingThroughput/Average", 43.3, "measured-pods/s"),
		result(s, 3.3, "SchedulingThroughput/Average", 42.8, "measured-pods/s"),
		result(s, 9.7, "SchedulingThroughput/Average", 42.75, "measured-pods/s"))
	got := bindRateNote(r, b, s, 0.95)
	want := " The bind rates (measured pods over the time from their first bind to their last) give 1.02 (rounds 0.99–1.06): " +
		"43 pods/s with ArchFilter against 42 without, while SchedulingThroughput, which averages one-second samples including " +
		"the seconds in which no pod is bound, swung from 2 to 27 pods/s without ArchFilter and from 3 to 10 with it."
	if got != want {
		t.Errorf("note:\n got %q\nwant %q", got, want)
	}
	slow := parse(t, result(b, 10, "SchedulingThroughput/Average", 40, "measured-pods/s"), result(s, 5, "SchedulingThroughput/Average", 20, "measured-pods/s"))
	if got := bindRateNote(slow, b, s, 0.95); got != "" {
		t.Errorf("bind rates that miss too: note %q", got)
	}
}
