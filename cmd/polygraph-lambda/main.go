// Command polygraph-lambda answers Auto Scaling lifecycle actions on AWS Lambda: the same
// handler as `polygraph hook`, for EventBridge events and SQS events (with partial batch
// failures). Its config is the file named by POLYGRAPH_CONFIG (bundled with the function) or
// the SSM parameter named by POLYGRAPH_CONFIG_PARAMETER.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/hook"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/run"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	h, cfg, err := setup(context.Background(), log)
	if err != nil {
		// The init error is reported by Lambda and the invocation retried; the instance
		// waits in Pending:Wait until the hook's heartbeat timeout applies its default result.
		log.Error("polygraph-lambda cannot start", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, payload json.RawMessage) (any, error) {
		return hook.Invoke(ctx, h, payload, cfg.Hook.Concurrency, log)
	})
}

// setup loads the config and builds the handler over the function's AWS configuration.
func setup(ctx context.Context, log *slog.Logger) (*hook.Handler, *config.Config, error) {
	cfg, err := loadConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if cfg.Fleet.EC2 == nil {
		return nil, nil, &config.Error{File: cfg.File, Msg: "hook needs fleet.ec2 (address and port): it is how the launching instance is addressed"}
	}
	ac, err := awsconf.Load(ctx, cfg.Fleet.EC2.Region)
	if err != nil {
		return nil, nil, err
	}
	verify := 2 * time.Minute
	if v := os.Getenv("POLYGRAPH_TIMEOUT"); v != "" {
		if verify, err = time.ParseDuration(v); err != nil || verify <= 0 {
			return nil, nil, fmt.Errorf("POLYGRAPH_TIMEOUT %q is not a positive duration", v)
		}
	}
	launches, err := run.NewLaunchesFromAWS(cfg, ac, run.Options{Logger: log}, run.LaunchOptions{VerifyTimeout: verify})
	if err != nil {
		return nil, nil, err
	}
	return hook.NewFromAWS(cfg, ac, launches.Verify, hook.WithLogger(log)), cfg, nil
}

// maxConfigBytes caps the config read from a file or a parameter.
const maxConfigBytes = 1 << 20

func loadConfig(ctx context.Context) (*config.Config, error) {
	if path := os.Getenv("POLYGRAPH_CONFIG"); path != "" {
		return config.Load(path)
	}
	name := os.Getenv("POLYGRAPH_CONFIG_PARAMETER")
	if name == "" {
		return nil, fmt.Errorf("no configuration: set POLYGRAPH_CONFIG (a bundled file) or POLYGRAPH_CONFIG_PARAMETER (an SSM parameter)")
	}
	ac, err := awsconf.Load(ctx, "")
	if err != nil {
		return nil, err
	}
	out, err := ssm.NewFromConfig(ac).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("reading the config parameter %q: %w", name, awsconf.Wrap(err, ac.Region))
	}
	value := aws.ToString(out.Parameter.Value)
	if len(value) > maxConfigBytes {
		return nil, fmt.Errorf("the config parameter %q is over %d bytes", name, maxConfigBytes)
	}
	dir := os.Getenv("LAMBDA_TASK_ROOT")
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return config.Parse([]byte(value), "ssm:"+name, dir)
}
