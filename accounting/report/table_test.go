package report

import (
	"strings"
	"testing"
)

// Columns print as Slurm's print_fields does: a negative width left-aligns the
// values and the header alike, a positive one right-aligns both; dashes are as
// wide as the column; a cut value ends in '+', a cut header is just cut.
func TestTextLayoutFollowsEachColumnsAlignment(t *testing.T) {
	table := Table{Columns: []Column{{"JobID", -8}, {"JobName", 6}, {"AllocCPUS", 9}, {"Account", -5}},
		Rows: [][]string{{"7", "train", "16", "nlp"}, {"1234567890", "finetune", "8", "vision"}}}
	tests := []struct {
		name string
		o    TextOptions
		want []string
	}{
		{"text", TextOptions{}, []string{
			"JobID    JobNam AllocCPUS Accou ",
			"-------- ------ --------- ----- ",
			"7         train        16 nlp   ",
			"1234567+ finet+         8 visi+ ",
		}},
		{"no header", TextOptions{NoHeader: true}, []string{
			"7         train        16 nlp   ",
			"1234567+ finet+         8 visi+ ",
		}},
		{"parsable", TextOptions{Parsable: true}, []string{
			"JobID|JobName|AllocCPUS|Account|",
			"7|train|16|nlp|",
			"1234567890|finetune|8|vision|",
		}},
		{"parsable2", TextOptions{Parsable2: true}, []string{
			"JobID|JobName|AllocCPUS|Account",
			"7|train|16|nlp",
			"1234567890|finetune|8|vision",
		}},
	}
	for _, tt := range tests {
		var b strings.Builder
		if err := table.WriteText(&b, tt.o); err != nil {
			t.Fatal(err)
		}
		if got, want := b.String(), strings.Join(tt.want, "\n")+"\n"; got != want {
			t.Errorf("%s:\n%s\nwant:\n%s", tt.name, got, want)
		}
	}
}
