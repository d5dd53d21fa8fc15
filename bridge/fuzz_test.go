package bridge

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// FuzzSchedule feeds arbitrary snapshots (JSON, seeded with every scenario) to the core: bad
// input must come back as problems and pending reasons, never as a panic.
func FuzzSchedule(f *testing.F) {
	files, _ := filepath.Glob("testdata/scenarios/*.yaml")
	for _, file := range files {
		raw, err := json.Marshal(loadScenario(&testing.T{}, file).snapshot())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var s Snapshot
		if json.Unmarshal(raw, &s) != nil {
			return
		}
		Schedule(&s)
	})
}
