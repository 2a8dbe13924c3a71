package redrive

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Write prints the report as a table, one line per dead-letter partition.
func (r *Report) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dead-letter topic\tpartition\tread\tput back\tdelivered\tdead-lettered again\tfiltered\tnot done\tsuperseded\tduplicates\tforeign\tunreadable\t")
	for _, p := range r.Sorted() {
		t := r.Parts[p]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", p.Topic, p.Partition, t.Read, t.Planned, t.Delivered,
			t.DeadLetters, t.Filtered, t.NotDone, t.Superseded, t.Duplicates, t.Foreign, t.Unreadable)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Sorted() {
		if err := r.Parts[p].Err; err != nil {
			if _, err := fmt.Fprintf(w, "%s: %v\n", p, err); err != nil {
				return err
			}
		}
	}
	return nil
}
