// Command scengen writes the public scenarios under testdata/scenarios and
// the demo incident embedded by agent/demo. The data is generated from a
// fixed seed per scenario, so a run rewrites identical files.
//
//	go run ./agent/eval/internal/scengen -scenarios testdata/scenarios -demo agent/demo/_incident
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

type scenFunc func() (*World, string, *Scenario)

var all = []scenFunc{
	scenOOM, scenCrashEnv, scenImagePull, scenBadDeploy, scenTLS, scenDBPool,
	scenDiskPressure, scenPending, scenReadiness, scenFlag, scenDependency, scenLambda, scenHealthy,
}

func main() {
	scen := flag.String("scenarios", "testdata/scenarios", "directory of the public scenarios")
	demo := flag.String("demo", "agent/demo/_incident", "directory of the demo incident")
	flag.Parse()
	for _, f := range all {
		w, desc, sc := f()
		if err := w.write(*scen, desc, sc); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("wrote", w.Name)
	}
	w, desc, sc := scenDemo()
	w.Name = filepath.Base(*demo)
	if err := w.write(filepath.Dir(*demo), desc, sc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("wrote", *demo)
}
