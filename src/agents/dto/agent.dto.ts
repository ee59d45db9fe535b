import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsNumber, IsObject, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import {
  DescriptionField,
  Omittable,
  NestedObject,
  DisplayNameField,
  IntegerField,
} from '../../common/validators';
import { type AgentPricing, FREE, MAX_CREDITS, MAX_PRICE } from '../agent-pricing';
import type { Agent } from '../agent.entity';
import { AGENT_TYPE_NAME, type TypedBuiltInAgent } from '../agent-runner';

export class AgentPricingDto implements AgentPricing {
  @ApiProperty({ minimum: 0, maximum: MAX_PRICE, description: 'Credits per 1,000 input tokens.' })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(MAX_PRICE)
  credits_per_1k_input_tokens: number;

  @ApiProperty({ minimum: 0, maximum: MAX_PRICE, description: 'Credits per 1,000 output tokens.' })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(MAX_PRICE)
  credits_per_1k_output_tokens: number;
}

/** The two cost fields of an agent, on create and update alike. */
class AgentCostFields {
  @ApiPropertyOptional({
    type: AgentPricingDto,
    nullable: true,
    description: "What a run costs per 1,000 tokens it reports (CONTRACT, 'Costs'); null or absent: free.",
  })
  @IsOptional()
  @NestedObject(() => AgentPricingDto)
  pricing?: AgentPricingDto | null;

  // agents.default_max_credits is an integer column.
  @IntegerField({
    minimum: 0,
    maximum: MAX_CREDITS,
    optional: 'nullable',
    description: 'Credits a task of this agent reserves when it names no max_credits; null or absent: 0.',
  })
  default_max_credits?: number | null;
}

const AGENT_CONFIG_DESCRIPTION =
  "The agent type's settings, checked by its runner (400 invalid_config). `http`: `url` (required, http(s), " +
  'at most 2000 characters), `timeout_ms` (100..300000, default OUTBOUND_TIMEOUT_MS) and `max_concurrency` ' +
  '(1..1000: at most that many runs of this agent at once in each worker process, its other tasks wait; ' +
  'unset, only WORKER_CONCURRENCY bounds them). `llm`: `provider` (`openai`: Chat Completions, or ' +
  '`anthropic`: the Messages API), `model`, `secret_id` (a secret of the organization, sent upstream as the ' +
  "provider's credential), and optional `base_url` (default the provider's public API; refused when the " +
  'outbound policy refuses it), `system` (at most 32 KiB), `max_output_tokens` (1..200000), `temperature` ' +
  '(0..2 for openai, 0..1 for anthropic). `echo` takes none.';

export class CreateAgentDto extends AgentCostFields {
  @DisplayNameField({ example: 'Summariser' })
  name: string;

  @ApiProperty({ example: 'http', description: 'A registered agent type: echo, http, llm, …' })
  @IsString()
  @Matches(AGENT_TYPE_NAME, { message: 'type must be a lowercase agent type' })
  type: string;

  @DescriptionField()
  description?: string | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: AGENT_CONFIG_DESCRIPTION,
    example: { url: 'https://agents.example.com/run', timeout_ms: 10000, max_concurrency: 50 },
  })
  @Omittable()
  @IsObject()
  config?: Record<string, unknown>;
}

export class UpdateAgentDto extends AgentCostFields {
  @DisplayNameField({ optional: true })
  name?: string;

  @DescriptionField()
  description?: string | null;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: AGENT_CONFIG_DESCRIPTION })
  @Omittable()
  @IsObject()
  config?: Record<string, unknown>;
}

export class AgentResponse {
  @ApiProperty({ example: 'agent_5JkQm2Tz8RpVw3Xy7NbLc4' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ example: 'echo' }) type: string;
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty() built_in: boolean;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: AGENT_CONFIG_DESCRIPTION })
  config?: Record<string, unknown>;
  @ApiProperty({ type: AgentPricingDto, description: 'Zeros when the agent is free (echo always is).' })
  pricing: AgentPricing;
  @ApiProperty({ type: 'integer', nullable: true }) default_max_credits: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) created_at: string | null;

  static of(agent: Agent): AgentResponse {
    return {
      id: agent.id,
      name: agent.name,
      type: agent.type,
      description: agent.description,
      built_in: false,
      config: agent.config,
      pricing: agent.pricing ?? FREE,
      default_max_credits: agent.defaultMaxCredits,
      created_at: agent.createdAt.toISOString(),
    };
  }

  /** A runner's built-in agent: no row, so no config and no creation time; free unless it declares pricing. */
  static ofBuiltIn(agent: TypedBuiltInAgent): AgentResponse {
    const { id, name, type, description } = agent;
    return {
      id,
      name,
      type,
      description,
      built_in: true,
      pricing: agent.pricing ? { ...agent.pricing } : FREE,
      default_max_credits: agent.defaultMaxCredits ?? null,
      created_at: null,
    };
  }
}

export class AgentPage {
  @ApiProperty({ type: [AgentResponse] }) data: AgentResponse[];
  @ApiProperty({ type: String, nullable: true }) next_cursor: string | null;
}
