package benchreport

import "testing"

// TestSchedulerMemoryRows: the scheduler's memory at each image count, with the
// growth from none; no row when the run did not measure it.
func TestSchedulerMemoryRows(t *testing.T) {
	r := parse(t,
		result(schedulerMemoryPrefix+"10000", 1, "ns/op", 109.2, "rss-MiB", 47.81, "heap-MiB", 10003, "cache-entries"),
		result(schedulerMemoryPrefix+"0", 1, "ns/op", 87.94, "rss-MiB", 40.54, "heap-MiB", 3, "cache-entries"),
		result(schedulerMemoryPrefix+"100000", 1, "ns/op", 179.8, "rss-MiB", 87.08, "heap-MiB", 100000, "cache-entries"))
	rows := schedulerMemoryRows(r)
	want := "0 images: RSS 88 MiB, live heap 41 MiB; " +
		"10 000 images: RSS 109 MiB, live heap 48 MiB (+21.3 MiB RSS, +7.3 MiB heap: 762 B of heap per image); " +
		"100 000 images: RSS 180 MiB, live heap 87 MiB (+91.9 MiB RSS, +46.5 MiB heap: 488 B of heap per image)"
	if len(rows) != 1 || rows[0].Result != want || rows[0].Section != curveSection || rows[0].Status != NoCheck {
		t.Errorf("rows = %+v\nwant result %q", rows, want)
	}
	if rows := schedulerMemoryRows(parse(t, cycleLines("everywhere/default", 1e6)...)); rows != nil {
		t.Errorf("rows without the benchmark: %+v", rows)
	}
}
