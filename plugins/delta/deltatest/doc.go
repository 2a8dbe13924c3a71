// Package deltatest holds Delta sink behaviour tests written once against a
// sinkdriver.Driver, run in-process by plugins/delta and through the built
// .so in the C host by e2e/delta, and the delta-rs readers they (and the rest
// of e2e/delta) check tables with. The suite is small so far: it is the
// in-process layer the Redshift suite (plugins/redshift/redshifttest) has,
// with one test to show it; more of e2e/delta can move here the same way.
package deltatest
