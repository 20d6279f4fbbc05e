package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// TestPublicURLSetting: public_url comes from the config file or
// ROOTCAUSE_PUBLIC_URL (env over file), is an absolute http(s) URL, and
// loses its trailing slash.
func TestPublicURLSetting(t *testing.T) {
	for _, tc := range []struct {
		name, file, env, want, err string
	}{
		{name: "Unset"},
		{name: "File", file: "https://rc.example.com", want: "https://rc.example.com"},
		{name: "EnvOverFile", file: "https://file.example.com", env: "https://env.example.com/", want: "https://env.example.com"},
		{name: "WithPath", env: "http://10.0.0.5:8080/rootcause/", want: "http://10.0.0.5:8080/rootcause"},
		{name: "Relative", env: "/rootcause", err: "public_url"},
		{name: "NoScheme", env: "rc.example.com", err: "public_url"},
		{name: "OtherScheme", env: "ftp://rc.example.com", err: "public_url"},
		{name: "UserInfo", env: "https://admin:pw@rc.example.com", err: "public_url"},
		{name: "Query", env: "https://rc.example.com/?x=1", err: "public_url"},
		{name: "NoHost", env: "https://", err: "public_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := viper.New()
			root := NewRootCommand(v)
			if tc.file != "" {
				file := filepath.Join(t.TempDir(), "rootcause.yaml")
				if err := os.WriteFile(file, []byte("public_url: "+tc.file+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := root.PersistentFlags().Set("config", file); err != nil {
					t.Fatal(err)
				}
				if err := readConfigFile(v); err != nil {
					t.Fatal(err)
				}
			}
			if tc.env != "" {
				t.Setenv("ROOTCAUSE_PUBLIC_URL", tc.env)
			}
			s, err := loadSettings(v)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.PublicURL != tc.want {
				t.Errorf("PublicURL = %q, want %q", s.PublicURL, tc.want)
			}
		})
	}
}
