// Package pqgroup builds Parquet groups whose columns keep a declared
// order. parquet-go's parquet.Group is a map and sorts its fields by name;
// a Delta data file lists its columns in the table schema's order and a
// Delta checkpoint in Delta-Spark's (txn, add, remove, metaData, …), so
// both build their groups with Ordered instead.
//
// Use it whenever parquet-go must write columns in an order you declare.
// It has no I/O and no dependency but parquet-go.
package pqgroup
