//go:build !k8s1.35

package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// row is one case's figures.
type row struct {
	order int
	fault string
	// pods of the burst and what became of them.
	pods, lost, misplaced, stuck, explained int
	// healing: misplaced pods were evicted to be placed again (--misplaced=evict);
	// misplacedEnd were left misplaced when the row ended, toHeal is the time
	// from the fault's end until the last was replaced by a pod placed right.
	healing      bool
	misplacedEnd int
	toHeal       time.Duration
	// recovery is the time from the fault to the first bind after it.
	recovery time.Duration
	// requests are the registry requests made by whoever took over, after it did
	// (-1: not measured for this fault).
	requests float64
	note     string
	// notRun says why the fault could not be injected here.
	notRun string
}

// table collects the rows of the cases that ran.
type table struct {
	mu   sync.Mutex
	rows []row
}

func (tb *table) add(r row) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, r)
}

func (tb *table) notRun(fault, why string) {
	tb.add(row{order: 1000, fault: fault, notRun: why})
}

// record adds a case's row from its burst's outcome.
func (tb *table) record(order int, fault string, o outcome, recovery time.Duration, requests float64, note string) {
	tb.add(row{order: order, fault: fault, pods: o.pods, lost: o.lost, misplaced: o.misplaced, stuck: o.stuck, explained: o.explained,
		healing: o.healing, misplacedEnd: o.misplacedEnd, toHeal: o.toHeal,
		recovery: recovery, requests: requests, note: note})
}

// markdown renders the table.
func (tb *table) markdown() string {
	tb.mu.Lock()
	rows := append([]row(nil), tb.rows...)
	tb.mu.Unlock()
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].order < rows[j].order })
	var b strings.Builder
	b.WriteString("| fault | pods | lost | misplaced | misplaced at the end | time to heal | stuck | Pending by policy | recovery | registry requests after takeover | note |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		if r.notRun != "" {
			fmt.Fprintf(&b, "| %s | not run: %s | | | | | | | | | |\n", r.fault, r.notRun)
			continue
		}
		req := "-"
		if r.requests >= 0 {
			req = fmt.Sprintf("%.0f", r.requests)
		}
		// Without healing nothing changes after the burst: "-".
		end, heal := "-", "-"
		if r.healing {
			end, heal = fmt.Sprint(r.misplacedEnd), r.toHeal.Round(100*time.Millisecond).String()
			if r.misplacedEnd > 0 {
				heal = "not healed in " + healWait.String()
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s | %d | %d | %s | %s | %s |\n",
			r.fault, r.pods, r.lost, r.misplaced, end, heal, r.stuck, r.explained, r.recovery.Round(100*time.Millisecond), req, r.note)
	}
	return b.String()
}

// header says where and when the table was measured.
func header() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("Measured by `make e2e-faults` on %s (%s/%s, %d CPUs, host %s).\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host)
}

// write puts the table in dir/table.md.
func (tb *table) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "table.md"), []byte(header()+"\n"+tb.markdown()), 0o644)
}

// The table's place in docs/reliability.md.
const (
	beginMarker = "<!-- faults:begin (written by make e2e-faults; do not edit) -->"
	endMarker   = "<!-- faults:end -->"
)

// updateDoc replaces the text between the markers of path with the table.
func (tb *table) updateDoc(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section", path, beginMarker, endMarker)
	}
	out := doc[:i+len(beginMarker)] + "\n" + header() + "\n" + tb.markdown() + doc[j:]
	return os.WriteFile(path, []byte(out), 0o644)
}
