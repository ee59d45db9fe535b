import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Query,
  Res,
  StreamableFile,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Principal } from '../access/principal';
import { ApiProblems } from '../common/openapi';
import { ListQueryDto, mapPage } from '../common/pagination';
import {
  Created,
  NoContent,
  Operation,
  RequirePermissions,
  TaskTokenAccess,
} from '../access/route-access.decorators';
import { FilePage, FileResponse, UploadFileDto, UploadFileForm } from './dto/file.dto';
import { contentDisposition } from './filename';
import { FilesService } from './files.service';
import type { StoredUpload } from './streaming-storage-engine';

@ApiTags('files')
@Controller('v1/files')
export class FilesController {
  constructor(private readonly files: FilesService) {}

  @Post()
  @TaskTokenAccess('output_upload')
  @Operation(
    'files:create',
    'Upload one file (multipart/form-data, field "file", optional "purpose")',
    Created(FileResponse),
    400,
    413,
  )
  @UseInterceptors(FileInterceptor('file'))
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: UploadFileForm })
  async upload(
    @Principal() principal: Principal,
    @UploadedFile() upload: StoredUpload | undefined,
    @Body() dto: UploadFileDto,
  ): Promise<FileResponse> {
    return FileResponse.of(await this.files.record(principal, upload, dto.purpose));
  }

  @Get()
  @Operation('files:read', "List the organization's files, newest first", FilePage, 400)
  async list(@Principal() principal: Principal, @Query() query: ListQueryDto): Promise<FilePage> {
    return mapPage(await this.files.list(principal, query), FileResponse.of);
  }

  @Get(':id')
  @TaskTokenAccess('task_file')
  @Operation('files:read', 'Get a file record', FileResponse, 404)
  async get(@Principal() principal: Principal, @Param('id') id: string): Promise<FileResponse> {
    return FileResponse.of(await this.files.get(principal, id));
  }

  @Get(':id/content')
  @TaskTokenAccess('task_file')
  @RequirePermissions('files:read')
  @ApiOperation({ summary: 'Download the bytes, with the stored content type' })
  // Sent as the type it was uploaded with (the record's `content_type`), whatever that is: any media type
  // (`*/*`). Documented first as application/octet-stream, so a generator reads the answer as bytes, never
  // as JSON (with openapi-fetch: `parseAs: 'blob'`, see clients/typescript).
  @ApiOkResponse({
    description:
      "The file's bytes, with the `content_type` of its record as Content-Type: read them as binary.",
    content: {
      'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
      '*/*': { schema: { type: 'string', format: 'binary' } },
    },
  })
  @ApiProblems(404)
  async content(
    @Principal() principal: Principal,
    @Param('id') id: string,
    @Res({ passthrough: true }) response: Response,
  ): Promise<StreamableFile> {
    const { file, content } = await this.files.open(principal, id);
    response.setHeader('Content-Type', file.contentType);
    response.setHeader('Content-Length', String(file.size));
    response.setHeader('Content-Disposition', contentDisposition(file.filename));
    response.setHeader('X-Content-Type-Options', 'nosniff');
    return new StreamableFile(content);
  }

  @Delete(':id')
  @HttpCode(204)
  @Operation('files:delete', 'Delete a file and its bytes', NoContent, 404)
  async delete(@Principal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.files.delete(principal, id);
  }
}
