package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// textLimit is how many gap or duplicate runs the text report lists per
// partition; the JSON report lists them all.
const textLimit = 20

// WriteText writes r as a table per sink, each partition's gaps and
// duplicates under its row, the notes, and a verdict line.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, s := range r.Sinks {
		fmt.Fprintf(tw, "sink %s (%s, %s)\n", s.Key, s.Plugin, s.File)
		fmt.Fprintln(tw, "topic\tpartition\ttable\tproof\tlog start\tcommitted\tend\tconsumed\twritten\tdead-lettered\tin both\tskipped\tcompacted\tmissing\tduplicated\tredriven\t")
		for _, p := range s.Partitions {
			committed := strconv.FormatInt(p.Committed, 10)
			if p.Committed < 0 {
				committed = "none"
			}
			proof := string(p.Proof)
			if p.TxnVersion != nil && p.Proof == ProofTxn {
				proof += " ≤ " + strconv.FormatInt(*p.TxnVersion, 10)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", p.Topic, p.Partition, p.Table, proof,
				p.LogStart, committed, p.End, p.Consumed, p.Written, p.DeadLetter, p.InBoth, p.Skipped, p.Compacted, p.Missing, p.Duplicated, p.Redriven)
		}
		tw.Flush()
		for _, p := range s.Partitions {
			if len(p.Gaps) > 0 {
				fmt.Fprintf(w, "  %s[%d] missing: %s\n", p.Topic, p.Partition, ranges(p.Gaps, textLimit, func(g Gap) (int64, int64, string) { return g.First, g.Last, "" }))
			}
			if len(p.Duplicates) > 0 {
				fmt.Fprintf(w, "  %s[%d] twice: %s\n", p.Topic, p.Partition, ranges(p.Duplicates, textLimit, func(d Dup) (int64, int64, string) { return d.First, d.Last, string(d.Where) }))
			}
		}
		for _, n := range s.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for _, n := range s.Unaudited {
			fmt.Fprintf(w, "  not audited: %s\n", n)
		}
		fmt.Fprintln(w)
	}
	if r.Clean {
		_, err := fmt.Fprintln(w, "clean: nothing missing, nothing twice")
		return err
	}
	if r.Missing == 0 && r.Duplicated == 0 {
		_, err := fmt.Fprintf(w, "NOTHING AUDITED for %d topic(s) or partition(s) (listed above): nothing missing or twice among the rest\n", r.Unaudited)
		return err
	}
	_, err := fmt.Fprintf(w, "NOT CLEAN: %d offset(s) missing, %d offset(s) held more than once, %d topic(s) or partition(s) not audited\n", r.Missing, r.Duplicated, r.Unaudited)
	return err
}

// WriteJSON writes r as one indented JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
