package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDepConflictLines reads a name missing from an installed library as
// Python, the JVM, Node, .NET and Ruby print it, and leaves a package
// missing altogether and other crashes to their own rules.
func TestDepConflictLines(t *testing.T) {
	testLines(t, depConflict, []lineCase{
		{`ImportError: cannot import name 'url_quote' from 'werkzeug.urls' (/usr/local/lib/python3.12/site-packages/werkzeug/urls.py)`, KindDependencyConflict},
		{`ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/venv/lib/python3.9/site-packages/markupsafe/__init__.py)`, KindDependencyConflict},
		{`AttributeError: module 'numpy' has no attribute 'float'.`, KindDependencyConflict},
		{`java.lang.NoSuchMethodError: 'boolean com.google.protobuf.GeneratedMessageV3.isStringEmpty(java.lang.Object)'`, KindDependencyConflict},
		{`Caused by: java.lang.NoSuchMethodError: com.google.common.base.Preconditions.checkArgument(ZLjava/lang/String;Ljava/lang/Object;)V`, KindDependencyConflict},
		{`Exception in thread "main" java.lang.NoClassDefFoundError: org/apache/commons/lang3/StringUtils`, KindDependencyConflict},
		{`SyntaxError: The requested module 'uuid' does not provide an export named 'v4'`, KindDependencyConflict},
		{`Unhandled exception. System.MissingMethodException: Method not found: 'Void Newtonsoft.Json.JsonSerializerSettings.set_MaxDepth(System.Nullable`, KindDependencyConflict},
		{`Gem::ConflictError: can't activate rack-2.2.8, already activated rack-3.0.9`, KindDependencyConflict},
		// Near misses: nothing conflicts, something is not installed.
		{`ModuleNotFoundError: No module named 'numpy'`, ""},
		{`Error: Cannot find module 'aws-sdk'`, ""},
		{`java.lang.ClassNotFoundException: com.mysql.cj.jdbc.Driver`, ""},
	})
}

// TestDepConflictNames reads the missing name and the words naming its
// package.
func TestDepConflictNames(t *testing.T) {
	cases := []struct{ line, name, word string }{
		{`ImportError: cannot import name 'url_quote' from 'werkzeug.urls' (/x/werkzeug/urls.py)`, "url_quote", "werkzeug"},
		{`AttributeError: module 'numpy' has no attribute 'float'.`, "float", "numpy"},
		{`java.lang.NoSuchMethodError: 'boolean com.google.protobuf.GeneratedMessageV3.isStringEmpty(java.lang.Object)'`, "com.google.protobuf.GeneratedMessageV3.isStringEmpty", "protobuf"},
		{`java.lang.NoSuchMethodError: com.google.common.base.Preconditions.checkArgument(ZLjava/lang/String;)V`, "com.google.common.base.Preconditions.checkArgument", "base"},
		{`java.lang.NoClassDefFoundError: org/apache/commons/lang3/StringUtils`, "org.apache.commons.lang3.StringUtils", "commons"},
		{`SyntaxError: The requested module 'uuid' does not provide an export named 'v4'`, "v4", "uuid"},
	}
	for _, c := range cases {
		name, pkg := conflictNames(c.line)
		if name != c.name {
			t.Errorf("%s: name %q, want %q", c.line, name, c.name)
		}
		if ws := packageWords(pkg); len(ws) == 0 || ws[0] != c.word {
			t.Errorf("%s: package words %v, want first %q", c.line, ws, c.word)
		}
	}
}

// TestDepConflictExplained reads the versions of the package that the
// commands handed over list (pip list of two images, a classpath listing,
// gradle's conflict arrow) and whether the dependency file pins it.
func TestDepConflictExplained(t *testing.T) {
	cases := []struct {
		name     string
		line     string
		cmds     []evidence.CommandOutput
		versions string
		unpinned string
	}{
		{"pip list of two images and requirements without the package",
			`ImportError: cannot import name 'url_quote' from 'werkzeug.urls' (/usr/local/lib/python3.12/site-packages/werkzeug/urls.py)`,
			[]evidence.CommandOutput{
				{Run: "docker run --rm --entrypoint pip web:old list", Lines: []string{"Flask              2.2.5", "Werkzeug           2.3.8"}},
				{Run: "docker run --rm --entrypoint pip web:new list", Lines: []string{"Flask              2.2.5", "Werkzeug           3.1.3"}},
				{Run: "grep -iE 'flask|werkzeug' requirements.txt", Lines: []string{"Flask==2.2.5"}},
			}, "2.3.8, 3.1.3", "requirements.txt"},
		{"pip freeze diff",
			`AttributeError: module 'numpy' has no attribute 'float'.`,
			[]evidence.CommandOutput{{Run: "diff old.txt new.txt", Lines: []string{"< numpy==1.23.5", "> numpy==1.26.4"}}},
			"1.23.5, 1.26.4", ""},
		{"jars on the classpath, another library's artifact ignored",
			`java.lang.NoSuchMethodError: 'boolean com.google.protobuf.GeneratedMessageV3.isStringEmpty(java.lang.Object)'`,
			[]evidence.CommandOutput{{Run: "ls /app/lib", Lines: []string{"grpc-protobuf-1.68.1.jar", "protobuf-java-3.17.3.jar", "protobuf-java-4.28.2.jar"}}},
			"3.17.3, 4.28.2", ""},
		{"gradle dependencies conflict arrow",
			`java.lang.NoSuchMethodError: 'boolean com.google.protobuf.GeneratedMessageV3.isStringEmpty(java.lang.Object)'`,
			[]evidence.CommandOutput{{Run: "./gradlew dependencies --configuration runtimeClasspath", Lines: []string{`+--- com.google.protobuf:protobuf-java:3.25.5 -> 3.17.3`}}},
			"3.25.5, 3.17.3", ""},
		{"no listing: the line alone",
			`ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/venv/markupsafe/__init__.py)`,
			nil, "", ""},
	}
	for _, c := range cases {
		f := Finding{Kind: KindDependencyConflict, Subject: "web", Weight: 0.85, Facts: map[string]string{"line": c.line}}
		explainDepConflict(&f, &Gathered{Commands: c.cmds})
		if got := f.fact("versions"); got != c.versions {
			t.Errorf("%s: versions %q, want %q", c.name, got, c.versions)
		}
		if got := f.fact("unpinned"); got != c.unpinned {
			t.Errorf("%s: unpinned %q, want %q", c.name, got, c.unpinned)
		}
		if f.fact("why") == "" || !strings.Contains(f.fact("why"), f.fact("missing_name")) {
			t.Errorf("%s: why %q should name the missing name", c.name, f.fact("why"))
		}
	}
}
