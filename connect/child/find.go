package child

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// HostName is the file name of the C host that buildscripts/build.sh puts
// into dist/.
const HostName = "picomq-host"

// FindHost returns the host binary to run plugins with: flag when set,
// else picomq-host in pluginDir (where build.sh puts it next to the
// libraries), next to the running executable, or on PATH.
func FindHost(flag, pluginDir string) (string, error) {
	if flag != "" {
		return exec.LookPath(flag)
	}
	var tried []string
	cands := []string{filepath.Join(pluginDir, HostName)}
	if exe, err := os.Executable(); err == nil {
		cands = append(cands, filepath.Join(filepath.Dir(exe), HostName))
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return c, nil
		}
		tried = append(tried, c)
	}
	if p, err := exec.LookPath(HostName); err == nil {
		return p, nil
	}
	return "", errors.New("no " + HostName + " binary in " + strings.Join(tried, ", ") +
		" or on PATH: build it with buildscripts/build.sh or name it with --host")
}
