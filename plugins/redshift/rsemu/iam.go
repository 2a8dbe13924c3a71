package rsemu

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// IAM is a fake of the AWS endpoints that issue temporary database
// credentials for the emulated cluster: Redshift's GetClusterCredentials
// and GetClusterCredentialsWithIAM (AWS Query protocol: a form POST and an
// XML answer) and Redshift Serverless's GetCredentials (JSON 1.1). Each
// successful call issues credentials the emulator accepts
// (Server.IssueCredentials) until their expiry.
//
// Point an aws-sdk-go-v2 client at URL(), with AWS_ENDPOINT_URL_REDSHIFT
// and AWS_ENDPOINT_URL_REDSHIFT_SERVERLESS or a BaseEndpoint, and any
// static AWS keys: the fake checks that a request is SigV4-signed for the
// right service, not the signature itself.
type IAM struct {
	emu  *Server
	http *httptest.Server

	mu       sync.Mutex
	cluster  string
	wg       string
	identity string
	lifetime time.Duration
	calls    []IAMCall
	faults   []iamFault
}

// IAMCall is one request the fake answered.
type IAMCall struct {
	Action     string // GetClusterCredentials, GetClusterCredentialsWithIAM or GetCredentials
	Service    string // the signing name in the Authorization header
	Region     string // the signing region
	AccessKey  string // the signing access key id
	Cluster    string // ClusterIdentifier
	Workgroup  string // workgroupName
	DbUser     string // DbUser asked for (GetClusterCredentials)
	DbName     string
	Duration   int    // DurationSeconds asked for, 0 when absent
	AutoCreate string // AutoCreate as sent, "" when absent
	Status     int    // HTTP status of the answer
	// Issued are the credentials handed out (zero on a failure).
	User, Password string
	Expiration     time.Time
}

type iamFault struct {
	times   int
	status  int
	code    string
	message string
}

// Defaults of the fake: the names it knows and the IAM identity calls are
// signed as (GetClusterCredentialsWithIAM and GetCredentials map it to
// the database user "IAM:<identity>").
const (
	IAMCluster   = "rsemu"
	IAMWorkgroup = "rsemu-wg"
	IAMIdentity  = "picomq-loader"
)

// NewIAMTest starts the fake for emu and stops it at the end of the test.
func NewIAMTest(t testing.TB, emu *Server) *IAM {
	t.Helper()
	f := &IAM{emu: emu, cluster: IAMCluster, wg: IAMWorkgroup, identity: IAMIdentity}
	f.http = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.http.Close)
	return f
}

// URL is the endpoint to point the SDK at.
func (f *IAM) URL() string { return f.http.URL }

// SetLifetime makes issued credentials expire d after issue whatever
// DurationSeconds asked (Redshift's minimum is 900 s, too long for a
// test); 0 goes back to DurationSeconds (default 900).
func (f *IAM) SetLifetime(d time.Duration) {
	f.mu.Lock()
	f.lifetime = d
	f.mu.Unlock()
}

// FailNext makes the next n calls fail with an AWS error: HTTP status,
// error code (AccessDenied, Throttling, InternalFailure, ...) and message.
func (f *IAM) FailNext(n, status int, code, message string) {
	f.mu.Lock()
	f.faults = append(f.faults, iamFault{times: n, status: status, code: code, message: message})
	f.mu.Unlock()
}

// ClearFaults drops the failures FailNext set up that are not used yet.
func (f *IAM) ClearFaults() {
	f.mu.Lock()
	f.faults = nil
	f.mu.Unlock()
}

// Calls are the requests answered so far, in order.
func (f *IAM) Calls() []IAMCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]IAMCall(nil), f.calls...)
}

// Issued counts the calls that issued credentials.
func (f *IAM) Issued() int {
	n := 0
	for _, c := range f.Calls() {
		if c.Password != "" {
			n++
		}
	}
	return n
}

func (f *IAM) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var c IAMCall
	json11 := r.Header.Get("X-Amz-Target") != ""
	c.AccessKey, c.Region, c.Service = sigV4Scope(r.Header.Get("Authorization"))
	if json11 {
		c.Action = strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "RedshiftServerless.")
		var in struct {
			WorkgroupName   string `json:"workgroupName"`
			DbName          string `json:"dbName"`
			DurationSeconds int    `json:"durationSeconds"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			f.fail(w, &c, true, 400, "SerializationException", err.Error())
			return
		}
		c.Workgroup, c.DbName, c.Duration = in.WorkgroupName, in.DbName, in.DurationSeconds
	} else {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			f.fail(w, &c, false, 400, "MalformedQueryString", err.Error())
			return
		}
		c.Action, c.Cluster, c.DbUser, c.DbName = form.Get("Action"), form.Get("ClusterIdentifier"), form.Get("DbUser"), form.Get("DbName")
		c.Duration, _ = strconv.Atoi(form.Get("DurationSeconds"))
		c.AutoCreate = form.Get("AutoCreate")
	}

	f.mu.Lock()
	wantService := "redshift"
	if json11 {
		wantService = "redshift-serverless"
	}
	var fault *iamFault
	if len(f.faults) > 0 {
		fault = &f.faults[0]
		if fault.times--; fault.times <= 0 {
			f.faults = f.faults[1:]
		}
	}
	cluster, wg, identity, lifetime := f.cluster, f.wg, f.identity, f.lifetime
	f.mu.Unlock()

	switch {
	case c.Service != wantService:
		f.fail(w, &c, json11, 403, "IncompleteSignature", fmt.Sprintf("request not SigV4-signed for %s (Authorization %q)", wantService, c.Service))
		return
	case fault != nil:
		f.fail(w, &c, json11, fault.status, fault.code, fault.message)
		return
	}
	if c.Duration == 0 {
		c.Duration = 900
	}
	if c.Duration < 900 || c.Duration > 3600 {
		f.fail(w, &c, json11, 400, "InvalidParameterValue", "DurationSeconds must be between 900 and 3600")
		return
	}
	user := "IAM:" + identity
	switch c.Action {
	case "GetClusterCredentials", "GetClusterCredentialsWithIAM":
		if c.Cluster != cluster {
			f.fail(w, &c, false, 404, "ClusterNotFound", fmt.Sprintf("Cluster %s not found.", c.Cluster))
			return
		}
		if c.Action == "GetClusterCredentials" {
			if c.DbUser == "" {
				f.fail(w, &c, false, 400, "InvalidParameterValue", "DbUser is required")
				return
			}
			user = c.DbUser
		}
	case "GetCredentials":
		if c.Workgroup != wg {
			f.fail(w, &c, true, 400, "ResourceNotFoundException", fmt.Sprintf("Workgroup %s not found.", c.Workgroup))
			return
		}
	default:
		f.fail(w, &c, json11, 400, "InvalidAction", "unknown action "+c.Action)
		return
	}
	if lifetime == 0 {
		lifetime = time.Duration(c.Duration) * time.Second
	}
	// AWS answers Expiration to the second.
	c.Expiration = time.Now().Add(lifetime).Truncate(time.Second).UTC()
	c.User, c.Password = user, f.emu.IssueCredentials(user, c.Expiration)
	c.Status = 200
	f.record(c)
	if json11 {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"dbUser": c.User, "dbPassword": c.Password, "expiration": c.Expiration.Unix(),
			"nextRefreshTime": c.Expiration.Unix(),
		})
		return
	}
	type result struct {
		DbUser     string
		DbPassword string
		Expiration string
	}
	out := struct {
		XMLName  xml.Name
		Xmlns    string `xml:"xmlns,attr"`
		Result   result `xml:"Result"`
		Metadata struct {
			RequestID string `xml:"RequestId"`
		} `xml:"ResponseMetadata"`
	}{XMLName: xml.Name{Local: c.Action + "Response"}, Xmlns: "http://redshift.amazonaws.com/doc/2012-12-01/",
		Result: result{DbUser: c.User, DbPassword: c.Password, Expiration: c.Expiration.Format(time.RFC3339)}}
	out.Metadata.RequestID = "rsemu-iam"
	b, _ := xml.Marshal(out)
	// The result element is named after the action.
	s := strings.ReplaceAll(string(b), "<Result>", "<"+c.Action+"Result>")
	s = strings.ReplaceAll(s, "</Result>", "</"+c.Action+"Result>")
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, s)
}

func (f *IAM) record(c IAMCall) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

// fail answers an AWS error in the protocol of the request.
func (f *IAM) fail(w http.ResponseWriter, c *IAMCall, json11 bool, status int, code, message string) {
	c.Status = status
	f.record(*c)
	if json11 {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": message})
		return
	}
	kind := "Sender"
	if status >= 500 {
		kind = "Receiver"
	}
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(message))
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<ErrorResponse xmlns="http://redshift.amazonaws.com/doc/2012-12-01/"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>rsemu-iam</RequestId></ErrorResponse>`,
		kind, code, b.String())
}

// sigV4Scope reads the access key, region and service of a SigV4
// Authorization header: "AWS4-HMAC-SHA256 Credential=AKID/20260101/region/service/aws4_request, ...".
func sigV4Scope(auth string) (key, region, service string) {
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 Credential=")
	if !ok {
		return "", "", ""
	}
	scope, _, _ := strings.Cut(rest, ",")
	parts := strings.Split(scope, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return "", "", ""
	}
	return parts[0], parts[2], parts[3]
}
