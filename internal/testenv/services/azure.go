package services

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// AzureContainerClient returns a shared-key client for container name on
// the test Azurite.
func (s Services) AzureContainerClient(t testing.TB, name string) *container.Client {
	t.Helper()
	cred, err := container.NewSharedKeyCredential(s.AzureAccount, s.AzureKey)
	if err != nil {
		t.Fatalf("services: Azurite credential: %v", err)
	}
	c, err := container.NewClientWithSharedKeyCredential(s.AzureEndpoint+"/"+url.PathEscape(name), cred, nil)
	if err != nil {
		t.Fatalf("services: Azurite client: %v", err)
	}
	return c
}

// NewAzureContainer creates an empty container for this test. t.Cleanup
// deletes it with everything in it.
func (s Services) NewAzureContainer(t testing.TB) string {
	t.Helper()
	name := "picomq-t-" + randomHex(6)
	c := s.AzureContainerClient(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatalf("services: create container %s at %s: %v\nIs Azurite running? buildscripts/services.sh start", name, s.AzureEndpoint, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := c.Delete(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerNotFound) {
			t.Errorf("services: delete container %s: %v", name, err)
		}
	})
	return name
}

// AzureContainerSAS returns a SAS token (without the leading '?') for
// container name with every permission the Delta sink needs (read, add,
// create, write, delete, list), valid for an hour.
func (s Services) AzureContainerSAS(t testing.TB, name string) string {
	t.Helper()
	cred, err := container.NewSharedKeyCredential(s.AzureAccount, s.AzureKey)
	if err != nil {
		t.Fatalf("services: Azurite credential: %v", err)
	}
	perms := sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}
	q, err := sas.BlobSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     time.Now().Add(-5 * time.Minute).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   perms.String(),
		ContainerName: name,
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatalf("services: sign SAS: %v", err)
	}
	return q.Encode()
}
